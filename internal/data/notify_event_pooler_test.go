package data_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestNotifyEventOnAnotherServerConnection: a SQL caller behind PgBouncer
// in transaction mode calls lease.acquire_quiet, and its lease.notify_event,
// a transaction of its own, lands on another server connection, one that
// never kept a payload (here made certain: other clients hold the call's
// server connection in open transactions). notify_event then sends the
// committed row's payload, which a listener on a direct connection hears.
// Before, it failed with unrecognized configuration parameter
// "lease.pending_event", and nothing was sent.
func TestNotifyEventOnAnotherServerConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	const poolSize = 4
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: poolSize})
	dsn, _ := pgtest.Login(t, db, "lease_app")
	via, err := b.Via(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pooled := func() *pgx.Conn {
		t.Helper()
		cfg, err := pgx.ParseConfig(via)
		if err != nil {
			t.Fatal(err)
		}
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec // one round trip a statement: no named statements across server connections
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	app := pooled()
	drain := collect(t, db.Conn(t), db.Conn(t))

	var id int64
	var kept uint32 // the server connection whose session kept the payload
	if err := app.QueryRow(ctx, `SELECT q.event_id, pg_backend_pid()
		FROM lease.acquire_quiet('acme', 'pooled', $1, '1 minute', 'sql caller') q`, uuid.New()).Scan(&id, &kept); err != nil {
		t.Fatalf("acquire_quiet through PgBouncer: %v", err)
	}
	held := false
	for range poolSize {
		tx, err := pooled().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		var pid uint32
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if held = pid == kept; held {
			break
		}
	}
	if !held {
		t.Fatalf("no client got server connection %d in %d tries: cannot make notify_event run elsewhere", kept, poolSize)
	}

	var sent bool
	var on uint32
	if err := app.QueryRow(ctx, `SELECT lease.notify_event($1), pg_backend_pid()`, id).Scan(&sent, &on); err != nil {
		t.Fatalf("notify_event(%d) on another server connection: %v", id, err)
	}
	if on == kept || !sent {
		t.Fatalf("notify_event(%d) = %v on server connection %d (the call's was %d); want true, elsewhere", id, sent, on, kept)
	}
	var want string
	if err := db.Conn(t).QueryRow(ctx, `SELECT lease.event_json(e) FROM lease.event e WHERE e.id = $1`, id).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if got := drain(); len(got) != 1 || got[0] != want {
		t.Errorf("a direct listener heard %q, want the committed row's payload %q once", got, want)
	}
}
