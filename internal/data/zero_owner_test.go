package data_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestNullAndZeroRunsOwnNothing: no lease function takes NULL or a zero
// value (the nil UUID, fence 0) for "any run" or "any fence", except
// force_release's documented NULL run, and none writes anything for them:
// the lease is unchanged and no event is recorded, not even a rejected
// renewal of a key nobody holds (which would let anyone write history for
// any key). acquire refuses the nil UUID as a run id, as data.Acquire does:
// its public id would name a secret everyone knows.
func TestNullAndZeroRunsOwnNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	s := db.Store(t)
	held := data.Key{Account: "acme", Session: "held"}
	secret := uuid.New()
	g := mustAcquire(t, s, held, secret, time.Minute)
	nilRun := uuid.Nil
	tests := []struct {
		name string
		sql  string
		args []any
		want string // the call's result as text, "NULL" for NULL
	}{
		{"renew a free key with a NULL run", `SELECT lease.renew('acme', 'free', $1, '1 min')`, []any{nil}, "NULL"},
		{"renew a free key with the nil run", `SELECT lease.renew('acme', 'free', $1, '1 min')`, []any{nilRun}, "NULL"},
		{"renew with a NULL run", `SELECT lease.renew('acme', 'held', $1, '1 min')`, []any{nil}, "NULL"},
		{"renew with the nil run", `SELECT lease.renew('acme', 'held', $1, '1 min')`, []any{nilRun}, "NULL"},
		{"release with a NULL run", `SELECT lease.release('acme', 'held', $1)`, []any{nil}, "false"},
		{"release with the nil run", `SELECT lease.release('acme', 'held', $1)`, []any{nilRun}, "false"},
		{"check_fence with a NULL run", `SELECT lease.check_fence('acme', 'held', $1, $2)`, []any{nil, g.Fence}, "false"},
		{"check_fence with the nil run", `SELECT lease.check_fence('acme', 'held', $1, $2)`, []any{nilRun, g.Fence}, "false"},
		{"check_fence with a NULL fence", `SELECT lease.check_fence('acme', 'held', $1, $2)`, []any{secret, nil}, "false"},
		{"check_fence with fence 0", `SELECT lease.check_fence('acme', 'held', $1, $2)`, []any{secret, int64(0)}, "false"},
		{"force_release of the nil run", `SELECT lease.force_release('acme', 'held', $1, 'r')`, []any{nilRun}, "false"},
		{"force_release of the run's secret", `SELECT lease.force_release('acme', 'held', $1, 'r')`, []any{secret}, "false"},
	}
	last := func() int64 {
		id, err := s.LastEventID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := last()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *string
			if err := conn.QueryRow(ctx, `SELECT (`+tt.sql[len("SELECT "):]+`)::text`, tt.args...).Scan(&got); err != nil {
				t.Fatalf("%s: %v", tt.sql, err)
			}
			if s := deref(got); s != tt.want {
				t.Errorf("%s with %v = %s, want %s", tt.sql, tt.args, s, tt.want)
			}
			if run, fence, ok := leaseOf(t, conn, held); !ok || run != data.PublicRunID(secret) || fence != g.Fence {
				t.Fatalf("after %s the lease is run %v fence %d (held %v), want unchanged", tt.name, run, fence, ok)
			}
		})
	}
	if after := last(); after != before {
		evs, _ := s.EventsSince(ctx, before, 100)
		t.Errorf("the calls recorded %d events, want none: %+v", after-before, evs)
	}

	_, err := conn.Exec(ctx, `SELECT * FROM lease.acquire('acme', 'zero', $1, '1 min', 'h')`, nilRun)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
		t.Errorf("acquire with the nil run id err = %v, want SQLSTATE 22023", err)
	}
	if _, _, ok := leaseOf(t, conn, data.Key{Account: "acme", Session: "zero"}); ok {
		t.Error("acquire with the nil run id granted a lease")
	}
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}
