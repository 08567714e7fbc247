package supervise_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// The database becomes unreachable for the holder (its connection is
// blackholed: no error, no reply). Renewals fail, the holder reports the
// lease at risk, then its local deadline stops the command, before the
// server-side expiry lets the waiting run in.
func TestRenewalFailureStopsBeforeExpiry(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	proxy, viaProxy := pgtest.Proxied(t, e.db.URL)
	env := recorderEnv(20 * time.Millisecond)
	a := e.leasetopEnv(t, env, runArgs("--dsn", viaProxy, "--ttl", "5s")...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	b := e.leasetopEnv(t, env, runArgs("--ttl", "5s", "--wait")...)
	pgtest.Eventually(t, 30*time.Second, "the second run to wait", func() bool { return strings.Contains(b.Stderr.String(), "waiting") })

	proxy.Blackhole()
	if got := a.Wait(t, 30*time.Second); got != 4 {
		t.Fatalf("cut-off holder exit = %d, want 4; stderr: %s", got, a.Stderr.String())
	}
	stderr := a.Stderr.String()
	atRisk, lost := strings.Index(stderr, "at risk"), strings.Index(stderr, "lost")
	if atRisk < 0 || lost < atRisk || !strings.Contains(stderr, "local deadline passed") {
		t.Errorf("cut-off holder stderr = %q, want \"at risk\", then lost by its local deadline", stderr)
	}
	cs := e.waitChildren(t, 2, 30*time.Second)
	stopped, second := cs[0], cs[1]
	over, ok := findEvent(e.events(t), func(ev data.Event) bool { return ev.Kind == data.KindTakenOver })
	if !ok || over.PrevRunID != first.RunID || over.RunID != second.RunID {
		t.Fatalf("takeover = %+v, want %v -> %v", over, first.RunID, second.RunID)
	}
	if !stopped.Stopped {
		t.Fatalf("the cut-off holder's child did not record its stop: %v", stopped)
	}
	if !stopped.End.Before(over.PrevExpiresAt) {
		t.Errorf("the cut-off holder's child stopped at %v, not before its lease expired on the server at %v",
			stopped.End, over.PrevExpiresAt)
	}
	if over.At.Before(over.PrevExpiresAt) || !second.Start.After(stopped.End) {
		t.Errorf("takeover at %v (expiry %v), second child from %v, first child until %v: want takeover after expiry and no overlap",
			over.At, over.PrevExpiresAt, second.Start, stopped.End)
	}
	t.Logf("the command stopped %s before the server-side expiry", over.PrevExpiresAt.Sub(stopped.End).Round(time.Millisecond))
	b.Signal(t, syscall.SIGTERM)
	b.Wait(t, 30*time.Second)
}

// lease.force_release on a running holder stops its command at once: the
// holder hears the release's notification and reads its row at once (the
// holder watch), finds it gone, and the command stops with exit 4 and the
// operator's reason, writing no renew_rejected ("zombie") line. The release
// is made a quarter of an interval after a renewal (on the database clock):
// a holder that noticed only at its next renewal, or at its local deadline
// (after renewals), would have sent a renewal of the released lease, which
// the database records as renew_rejected; so that event's absence, not a
// stopwatch, shows that it stopped before its next scheduled renewal.
func TestForcedReleaseStopsHolder(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	ctx := context.Background()
	const ttl = 6 * time.Second
	const interval = ttl / 3 // the renew interval
	a := e.leasetopEnv(t, recorderEnv(20*time.Millisecond), runArgs("--ttl", ttl.String())...)
	first := e.waitChildren(t, 1, 30*time.Second)[0]
	var renewed time.Time
	pgtest.Eventually(t, 30*time.Second, "the holder's first renewal", func() bool {
		var acquired time.Time
		err := e.pool.QueryRow(ctx, `SELECT acquired_at, renewed_at FROM lease.session_lease WHERE account_id = $1 AND session_id = $2`,
			testKey.Account, testKey.Session).Scan(&acquired, &renewed)
		return err == nil && renewed.After(acquired)
	})
	pgtest.WaitServerPast(t, e.pool, renewed.Add(interval/4))
	ok, err := e.store.ForceRelease(ctx, testKey, first.RunID, "stuck job")
	if err != nil || !ok {
		t.Fatalf("ForceRelease = %v, %v", ok, err)
	}
	if got := a.Wait(t, 30*time.Second); got != 4 {
		t.Fatalf("exit = %d, want 4; stderr: %s", got, a.Stderr.String())
	}
	if stderr := a.Stderr.String(); !strings.Contains(stderr, "force-released") || !strings.Contains(stderr, `"stuck job"`) {
		t.Errorf("stderr = %q, want the forced release and its reason", stderr)
	}
	evs := e.events(t)
	forced, ok := findEvent(evs, func(ev data.Event) bool { return ev.Kind == data.KindForceReleased })
	if !ok {
		t.Fatal("no force_released event")
	}
	if last := forced.ExpiresAt.Add(-ttl); !last.Equal(renewed) {
		t.Fatalf("the released lease was last renewed at %v, not at %v: a renewal came within a quarter interval", last, renewed)
	}
	for _, ev := range evs {
		if ev.Kind == data.KindRenewRejected && ev.RunID == first.RunID {
			t.Errorf("a renew_rejected of the run at %v: the holder renewed the released lease (it noticed at its next renewal, or its watch checked by renewing), not by reading its row at the release's notification", ev.At)
		}
	}
	child := e.children(t)[0]
	if !child.Stopped {
		t.Fatalf("child did not record its stop: %v", child)
	}
	took := child.End.Sub(forced.At)
	t.Logf("command stopped %s after the forced release (renew interval %s)", took.Round(time.Millisecond), interval)
	for _, r := range child.Records {
		if r.Kind == "write" && r.At.After(forced.At) {
			t.Errorf("write accepted at %v after the forced release at %v", r.At, forced.At)
		}
	}
}

// A command that ignores SIGTERM after the loss is killed after --grace,
// with everything in its process group.
func TestLossKillsCommandAfterGrace(t *testing.T) {
	e := newEnv(t)
	script := `trap "" TERM; echo $$; while :; do sleep 0.02; done`
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session,
		"--ttl", "1s", "--grace", "300ms", "--", "sh", "-c", script)
	var pid int
	pgtest.Eventually(t, 30*time.Second, "the command to print its pid", func() bool {
		n, err := strconv.Atoi(strings.TrimSpace(a.Stdout.String()))
		pid = n
		return err == nil && n > 0
	})
	if _, err := e.store.ForceReleaseAny(context.Background(), testKey, "stop it"); err != nil {
		t.Fatal(err)
	}
	if got := a.Wait(t, 30*time.Second); got != 4 {
		t.Fatalf("exit = %d, want 4; stderr: %s", got, a.Stderr.String())
	}
	if stderr := a.Stderr.String(); !strings.Contains(stderr, "sending SIGKILL") {
		t.Errorf("stderr = %q, want it to say the command got SIGKILL after the grace period", stderr)
	}
	waitGone(t, pid, 10*time.Second, "the command that ignored SIGTERM")
	pgtest.Eventually(t, 10*time.Second, "nothing left in the command's process group", func() bool { return proctest.GroupGone(pid) })
}
