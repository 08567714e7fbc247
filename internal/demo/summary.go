package demo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/termtext"
)

// WriteSummary prints what the demo counted and the verdict on each
// invariant, one line per broken promise.
func WriteSummary(w io.Writer, o Outcome) {
	t := o.Tally
	how := "ran"
	if o.Interrupted {
		how = "was interrupted after"
	}
	fmt.Fprintf(w, "\nsummary: the demo %s %s (seed %d)\n", how, o.Elapsed.Round(100*time.Millisecond), o.Seed)
	rows := []struct {
		name string
		n    int
	}{
		{"runs started", t.RunsStarted},
		{"refusals (busy: owner and time left shown)", t.Refusals},
		{"takeovers after process loss", t.TakeoversAfterLoss},
		{"zombie renewals rejected", t.ZombieRenewalsRejected},
		{"stale-fence writes refused", t.StaleWritesRefused},
		{"forced releases", t.ForcedReleases},
		{"preempts (a new message stopped the run)", t.Preempts},
		{"preempts refused (the run was paying)", t.PreemptsRefused},
		{"joins (followed the running run's stream)", t.Joins},
		{"queue waits (tickets taken, served in order)", t.QueueWaits},
		{"hand-overs (continue on this device)", t.HandOvers},
		{"refused at the account's limit (its plan)", t.LimitRefusals},
		{"messages sent (steer, cancel)", t.MessagesSent},
		{"messages carried to the next holder", t.MessagesCarried},
		{"messages acknowledged by their holder", t.MessagesAcked},
		{"messages expired unacknowledged", t.MessagesExpired},
		{"clean releases", t.Releases},
		{"takeovers in all", t.Takeovers},
		{"writes accepted through the fence check", t.WritesAccepted},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-44s %6d\n", r.name, r.n)
	}
	fmt.Fprintf(w, "  %-44s %d kill -9, %d SIGSTOP, %d force-release\n", "chaos", t.Kills, t.Freezes, t.Forced)
	accts := slices.Sorted(maps.Keys(o.Limits))
	for _, a := range accts {
		l := o.Limits[a]
		fmt.Fprintf(w, "  %-44s %d of %d\n", "most live runs of "+termtext.Clean(a, 24)+" at once", l.Peak, l.Slots)
	}
	writeDevices(w, o.Devices, o.DevicesErr)
	fmt.Fprintln(w, "invariants:")
	for _, inv := range audit.Invariants() {
		failed := o.Failed(inv)
		verdict := "ok  "
		if len(failed) > 0 {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "  %s  %d. %s\n", verdict, inv, inv)
		for _, v := range failed {
			fmt.Fprintf(w, "          %s\n", termtext.Clean(v.String(), 0))
		}
	}
}
