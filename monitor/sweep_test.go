package monitor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// TestFeedSweepSeesEveryRenewal: a feed that reads the
// lease table one page a read (SweepPages 1) still shows every renewal, in
// the first page, the last and between, including a renewal that moves its
// row to another page (the seeded pages are full: no HOT update fits), and
// its health says how old its view of renewals may be: a whole pass.
func TestFeedSweepSeesEveryRenewal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	runs := make([]uuid.UUID, 1500) // each lease's run's own id, which renews it
	for i := range runs {
		runs[i] = uuid.New()
	}
	if _, err := conn.Exec(ctx, `SELECT lease.acquire('acct', 'sess-' || g, ($1::uuid[])[g], '1 hour', 'device') FROM generate_series(1, 1500) g`, runs); err != nil {
		t.Fatal(err)
	}
	s := db.Store(t)
	pages, err := s.LeasePages(ctx)
	if err != nil || pages < 8 {
		t.Fatalf("%d pages (%v), want several", pages, err)
	}
	m := startMirror(t, s, monitor.FeedConfig{DeltaInterval: 50 * time.Millisecond, SweepPages: 1})
	waitFor(t, m, "every lease", func(s *monitor.State) bool { return s.Len() == 1500 })
	for _, i := range []int{1, 700, 1500} {
		sess := fmt.Sprintf("sess-%d", i)
		k := data.Key{Account: "acct", Session: sess}
		var before string
		if err := conn.QueryRow(ctx, `SELECT ctid::text FROM lease.session_lease WHERE account_id = 'acct' AND session_id = $1`, sess).Scan(&before); err != nil {
			t.Fatal(err)
		}
		exp, err := s.Renew(ctx, k, runs[i-1], 2*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var after string
		if err := conn.QueryRow(ctx, `SELECT ctid::text FROM lease.session_lease WHERE account_id = 'acct' AND session_id = $1`, sess).Scan(&after); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s renewed: row %s -> %s", sess, before, after)
		waitFor(t, m, "the renewal of "+sess, func(s *monitor.State) bool { l, _ := s.Lease(k); return l.ExpiresAt.Equal(exp) })
	}
	waitFor(t, m, "the age of the view of renewals", func(s *monitor.State) bool {
		return s.Health(time.Now()).RenewalsAge > 0
	})
}
