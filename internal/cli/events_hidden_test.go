package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/syncbuf"
)

// TestEventsFollowSeesHiddenTakeovers: a lease_app login takes over an
// expired lease in a transaction that opts out of the trigger's NOTIFY
// (lease.caller_notifies) and, before committing, either sends a forged
// notification naming it (attack a) or keeps it open while 1100 other
// events commit (attack b). `events --follow`, listening and polling, must
// print the takeover exactly once after the commit. A consumer that trusts
// the notifications alone never prints it, except (a) while polling.
func TestEventsFollowSeesHiddenTakeovers(t *testing.T) {
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"listen", nil},
		{"poll", []string{"--poll", "50ms"}},
	} {
		for _, attack := range []string{"forged", "held"} {
			t.Run(mode.name+"/"+attack, func(t *testing.T) {
				followHidden(t, attack, mode.args)
			})
		}
	}
}

func followHidden(t *testing.T, attack string, args []string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := pgtest.New(t)
	owner := db.Conn(t)
	victim := uuid.New()
	if _, err := owner.Exec(ctx, `SELECT lease.acquire('acme', 'hidden', $1, '1 millisecond', 'victim')`, victim); err != nil {
		t.Fatal(err)
	}
	k := data.Key{Account: "acme", Session: "hidden"}
	pgtest.WaitExpired(t, owner, k)

	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, db.URL, &out, &errOut, append([]string{"events", "--follow", "--json"}, args...)...)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("stderr %q", errOut.String())
		}
	})
	printed := func(id int64) int {
		n := 0
		for line := range strings.Lines(out.String()) {
			var ev struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.ID == id {
				n++
			}
		}
		return n
	}
	// marker makes a transition and waits until it is printed (see
	// pgtest.MarkerEvent for a silent one).
	marker := func(session string, silent bool) int64 {
		t.Helper()
		id := pgtest.MarkerEvent(t, db, session, silent)
		pgtest.Eventually(t, 30*time.Second, "the marker "+session, func() bool { return printed(id) == 1 })
		return id
	}
	pgtest.Eventually(t, 20*time.Second, "following events live", func() bool {
		return strings.Contains(errOut.String(), "following events live") || strings.Contains(errOut.String(), "poll")
	})
	marker("marker-0", false)

	h := pgtest.OpenHiddenTakeover(t, db, k)
	switch attack {
	case "forged":
		h.Forge(t)
	case "held":
		pgtest.BulkEvents(t, db, 1100)
	}
	// The follower has read everything before the marker: a forged
	// notification is read back (notifications come in commit order), and
	// the catch-up or the poller has read past the bulk.
	marker("marker-1", attack == "held")
	h.Commit(t)
	pgtest.Eventually(t, 30*time.Second, "the hidden takeover printed", func() bool { return printed(h.ID) > 0 })
	marker("marker-2", false)
	if n := printed(h.ID); n != 1 {
		t.Errorf("the takeover %d was printed %d times, want once", h.ID, n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("events --follow returned %v after cancel, want nil", err)
	}
}
