package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
	"github.com/leasetop/leasetop/internal/syncbuf"
)

// TestEventsFollowSeesHiddenTakeovers: a lease_app login takes over an
// expired lease in a transaction that opts out of the trigger's NOTIFY
// (lease.caller_notifies) and, before committing, either sends a forged
// notification naming it (attack a) or keeps it open while 1100 other
// events commit (attack b). `events --follow`, listening and polling, must
// print the takeover exactly once after the commit. Before (issue 23),
// it never printed it, except (a) while polling.
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
	// marker makes a transition and waits until it is printed. A silent one
	// opts out of the trigger's NOTIFY and sends none: a listening follower
	// prints it only once its catch-up has read every row before it.
	marker := func(session string, silent bool) int64 {
		t.Helper()
		var id int64
		err := pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
			if silent {
				if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `SELECT lease.acquire('acme', $1, gen_random_uuid(), '1 hour', 'marker')`, session); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT max(id) FROM lease.event WHERE session_id = $1`, session).Scan(&id)
		})
		if err != nil {
			t.Fatal(err)
		}
		pgtest.Eventually(t, 30*time.Second, "the marker "+session, func() bool { return printed(id) == 1 })
		return id
	}
	pgtest.Eventually(t, 20*time.Second, "following events live", func() bool {
		return strings.Contains(errOut.String(), "following events live") || strings.Contains(errOut.String(), "poll")
	})
	marker("marker-0", false)

	dsn, _ := pgtest.Login(t, db, "lease_app")
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	attacker, other := connect(), connect()
	tx, err := attacker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	theirs := uuid.New()
	if _, err := tx.Exec(ctx, `SELECT set_config('lease.caller_notifies', extract(epoch FROM now())::text, true)`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT * FROM lease.acquire('acme', 'hidden', $1, '1 hour', 'attacker')`, theirs); err != nil {
		t.Fatalf("takeover as lease_app: %v", err)
	}
	var id int64
	if err := owner.QueryRow(ctx, `SELECT last_value FROM lease.event_id_seq`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	switch attack {
	case "forged":
		payload, err := json.Marshal(map[string]any{"id": id, "at": time.Now(), "kind": data.KindTakenOver,
			"account_id": k.Account, "session_id": k.Session, "run_id": data.PublicRunID(theirs), "holder": "attacker"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Exec(ctx, `SELECT pg_notify('lease_events', $1)`, string(payload)); err != nil {
			t.Fatal(err)
		}
	case "held":
		if _, err := owner.Exec(ctx, `SELECT lease.acquire('bulk', 's' || g, gen_random_uuid(), '1 hour', 'bulk')
			FROM generate_series(1, 1100) g`); err != nil {
			t.Fatal(err)
		}
	}
	// The follower has read everything before the marker: a forged
	// notification is read back (notifications come in commit order), and
	// the catch-up or the poller has read past the bulk.
	marker("marker-1", attack == "held")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.Eventually(t, 30*time.Second, "the hidden takeover printed", func() bool { return printed(id) > 0 })
	marker("marker-2", false)
	if n := printed(id); n != 1 {
		t.Errorf("the takeover %d was printed %d times, want once", id, n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("events --follow returned %v after cancel, want nil", err)
	}
}
