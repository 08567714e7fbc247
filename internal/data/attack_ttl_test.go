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

// cancellingTTLs compare as at most 24 hours (PostgreSQL counts a month as
// 30 days when it compares intervals) but span something else on the
// calendar: the first expires in the year 5615, the second before it starts.
var cancellingTTLs = []string{
	"3000000 months -90000000 days 23 hours",
	"-1200 months 36000 days 1 second",
}

// TestTTLCapHoldsOnTheClock logs in as a lease_app and calls lease.acquire
// and lease.renew with TTLs whose month and day parts cancel in the
// comparison with '24 hours' but not on the calendar. Each must be refused
// (22023) with nothing granted, extended or recorded: a cap compared as an
// interval would grant the first a lease until the year 5615 and the second
// one already expired.
// The library sends a time.Duration (microseconds, no month or day parts):
// its longest TTL, 24 hours, still spans exactly 24 hours for acquire and
// renew.
func TestTTLCapHoldsOnTheClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	owner := db.Store(t)
	app, login := connectAs(t, db, "lease_app")
	before := len(events(t, owner))

	refused := func(what string, err error) {
		t.Helper()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "22023" {
			t.Errorf("%s as %s: err = %v, want SQLSTATE 22023", what, login, err)
		}
	}
	for _, ttl := range cancellingTTLs {
		var exp time.Time
		err := app.QueryRow(ctx, `SELECT expires_at FROM lease.acquire('acme', 'fresh', $1, $2::interval, '')`,
			uuid.New(), ttl).Scan(&exp)
		refused("acquire with ttl '"+ttl+"' (granted until "+exp.String()+")", err)
	}
	if _, _, ok := leaseOf(t, db.Conn(t), data.Key{Account: "acme", Session: "fresh"}); ok {
		t.Errorf("acquire with cancelling month and day parts left a lease behind")
	}

	// Renewals of the attacker's own lease.
	run := uuid.New()
	var granted time.Time
	if err := app.QueryRow(ctx, `SELECT expires_at FROM lease.acquire('acme', 'own', $1, '1 minute', '')`, run).Scan(&granted); err != nil {
		t.Fatalf("acquire as %s: %v", login, err)
	}
	for _, ttl := range cancellingTTLs {
		var exp *time.Time
		err := app.QueryRow(ctx, `SELECT lease.renew('acme', 'own', $1, $2::interval)`, run, ttl).Scan(&exp)
		refused("renew with ttl '"+ttl+"'", err)
	}
	var exp time.Time
	if err := db.Conn(t).QueryRow(ctx, `SELECT expires_at FROM lease.session_lease WHERE account_id = 'acme' AND session_id = 'own'`).Scan(&exp); err != nil || !exp.Equal(granted) {
		t.Errorf("after the refused renewals the lease expires at %v (%v), want %v as granted", exp, err, granted)
	}
	if n := len(events(t, owner)) - before; n != 1 {
		t.Errorf("the attack wrote %d events, want 1 (the attacker's own acquire)", n)
	}

	// The library, as a lease_app login: 24 hours is the cap, inclusive.
	dsn, _ := pgtest.Login(t, db, "lease_app")
	lib, err := data.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	k := data.Key{Account: "acme", Session: "library"}
	libRun := uuid.New()
	mustAcquire(t, lib, k, libRun, data.MaxTTL)
	if _, err := lib.Renew(ctx, k, libRun, data.MaxTTL); err != nil {
		t.Fatalf("Renew(%v) = %v, want nil", data.MaxTTL, err)
	}
	var span time.Duration
	if err := db.Conn(t).QueryRow(ctx, `SELECT expires_at - renewed_at FROM lease.session_lease WHERE account_id = $1 AND session_id = $2`,
		k.Account, k.Session).Scan(&span); err != nil || span != data.MaxTTL {
		t.Errorf("the library's renewal for %v spans %v (%v), want %v", data.MaxTTL, span, err, data.MaxTTL)
	}
}
