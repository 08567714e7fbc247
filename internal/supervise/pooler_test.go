package supervise_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestRunThroughPooler: `leasetop run --wait` as a real process with its
// DATABASE_URL through a real PgBouncer in transaction mode. It waits while
// another run holds the lease, takes it when that run releases, keeps it
// through renewals while the command runs (TTL 1 s, a 2.5 s command), and
// releases it after. Without a listen DSN its waiter polls and says so in
// one line naming --listen-dsn; with LEASETOP_LISTEN_DSN it listens.
func TestRunThroughPooler(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen bool
	}{{"no listen DSN", false}, {"listen DSN", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			e.dumpOnFailure(t)
			via := e.db.Via(t, pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 2}))
			holder := uuid.New()
			if _, err := e.store.Acquire(ctx, testKey, holder, time.Minute, "holder"); err != nil {
				t.Fatal(err)
			}
			extra := []string{"DATABASE_URL=" + via}
			if tc.listen {
				extra = append(extra, "LEASETOP_LISTEN_DSN="+e.db.URL)
			}
			p := e.leasetopEnv(t, extra, "run", "--account", testKey.Account, "--session", testKey.Session,
				"--wait", "--ttl", "1s", "--holder", "pooled", "--", "sh", "-c", `sleep 2.5; echo "fence $LEASETOP_FENCE"`)
			pgtest.Eventually(t, 15*time.Second, "leasetop run to wait", func() bool {
				return strings.Contains(p.Stderr.String(), "waiting")
			})
			if !tc.listen {
				pgtest.Eventually(t, 15*time.Second, "the poll line", func() bool {
					return strings.Contains(p.Stderr.String(), "polling lease.event every 250ms: the connection goes through a pooler")
				})
			}
			if _, err := e.store.Release(ctx, testKey, holder); err != nil {
				t.Fatal(err)
			}
			if code := p.Wait(t, 30*time.Second); code != 0 {
				t.Fatalf("exit code %d, want 0; stderr:\n%s", code, p.Stderr.String())
			}
			stderr := p.Stderr.String()
			if polled := strings.Contains(stderr, "polling lease.event"); polled == tc.listen ||
				(polled && !strings.Contains(stderr, "--listen-dsn")) {
				t.Errorf("stderr %q: want one poll line naming --listen-dsn only without a listen DSN", stderr)
			}
			evs := e.events(t)
			last := evs[len(evs)-1]
			got, ok := findEvent(evs, func(ev data.Event) bool { return ev.Kind == data.KindAcquired && ev.Holder == "pooled" })
			if !ok || last.Kind != data.KindReleased || last.RunID != got.RunID {
				t.Fatalf("events %+v: want the run's acquisition, then its release last (no loss, no zombie)", evs)
			}
			if out := strings.TrimSpace(p.Stdout.String()); out != "fence "+strconv.FormatInt(got.Fence, 10) {
				t.Errorf("command printed %q, want its fence %d", out, got.Fence)
			}
		})
	}
}
