package data_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// hostileRead names, unqualified, what the shadows stand in for: an
// operator over a lease domain and text (a better match than pg_catalog's
// whatever the path), a type name, a zero-argument function and an
// aggregate.
const hostileRead = `SELECT count(*) FROM lease.session_lease l
	WHERE l.account_id = $1::text AND l.expires_at > now()`

// plantedDatabase is a database whose owner planted pgtest's shadows in
// public and put public before pg_catalog, with a lease held on acme/s (so
// that operators over the table's rows and aggregates over them run), and
// a lease_app login on it.
func plantedDatabase(t *testing.T) (pgtest.DB, *pgtest.Shadows, string) {
	t.Helper()
	db := pgtest.New(t)
	sh := pgtest.PlantShadows(t, db)
	sh.SetSearchPath(t, "public, pg_catalog")
	if _, err := db.Store(t).Acquire(context.Background(), data.Key{Account: "acme", Session: "s"}, uuid.New(), time.Hour, "holder"); err != nil {
		t.Fatal(err)
	}
	if ran := sh.Ran(t); len(ran) > 0 {
		t.Fatalf("setting up, shadows ran: %v", ran)
	}
	dsn, _ := pgtest.Login(t, db, "lease_app")
	return db, sh, dsn
}

// TestPinnedResolvesNothingPlanted: through Pinned, a statement that names
// planted objects unqualified resolves none of them, in every query mode and
// through each of Pinned's methods, and the session's own search_path is
// left as the database set it. The same statement on the pool runs them.
func TestPinnedResolvesNothingPlanted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, sh, dsn := plantedDatabase(t)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			store, err := data.Open(ctx, dsn+"&default_query_exec_mode="+mode)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			p := store.Pinned()
			var n int
			check := func(how string, err error) {
				t.Helper()
				if err != nil || n != 1 {
					t.Errorf("%s: count %d, err %v; want 1", how, n, err)
				}
				n = 0
			}
			check("QueryRow", p.QueryRow(ctx, hostileRead, "acme").Scan(&n))
			rows, err := p.Query(ctx, hostileRead, "acme")
			if err == nil {
				n, err = pgx.CollectOneRow(rows, pgx.RowTo[int])
			}
			check("Query", err)
			tag, err := p.Exec(ctx, hostileRead, "acme")
			n = int(tag.RowsAffected())
			check("Exec", err)
			b := &pgx.Batch{}
			b.Queue(hostileRead, "acme").QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
			check("SendBatch", p.SendBatch(ctx, b).Close())
			err = pgx.BeginTxFunc(ctx, p, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, hostileRead, "acme").Scan(&n)
			})
			check("BeginTx", err)
			if ran := sh.Ran(t); len(ran) > 0 {
				t.Errorf("through Pinned, shadows ran: %v", ran)
			}
			var path string
			if err := store.Pool().QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil || path != "public, pg_catalog" {
				t.Errorf("the session's search_path is %q (%v), want the database's, untouched", path, err)
			}
			// The control: the same statement on the pool.
			_ = store.Pool().QueryRow(ctx, hostileRead, "acme").Scan(&n)
			if ran := sh.Ran(t); len(ran) == 0 {
				t.Errorf("on the pool, the statement ran no shadow: it proves nothing")
			}
		})
	}
}

// TestPinBeforeParse shows why Pinned opens a transaction instead of
// putting the pin in a batch with the statement. PostgreSQL plans a
// prepared statement again when the search_path changed since it was
// parsed, so an operator is resolved again under the pin; but the
// parameters keep the types inferred when it was parsed, and a parameter
// typed as a planted domain runs the domain's CHECK as it is bound. pgx
// prepares a batch's new statements in a round trip of its own, before the
// batch: under the session's path.
func TestPinBeforeParse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, sh, dsn := plantedDatabase(t)
	conn, err := pgx.Connect(ctx, dsn) // cache_statement: prepared once per connection
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pin := `SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true)`
	pinnedBatch := func(sql string) {
		t.Helper()
		b := &pgx.Batch{}
		b.Queue(pin)
		b.Queue(sql, "acme")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
	}
	ran := func() []string {
		var out []string
		for _, m := range sh.Ran(t) {
			out = append(out, m.Shadow.Sig)
		}
		return out
	}

	// An operator, parsed under the planted path, is resolved again.
	operator := `SELECT count(*) FROM lease.session_lease WHERE account_id = $1::pg_catalog.text`
	if _, err := conn.Exec(ctx, operator, "acme"); err != nil {
		t.Fatal(err)
	}
	if got := ran(); !strings.Contains(fmt.Sprint(got), "public.=(lease.id_text,text)") {
		t.Fatalf("unpinned, %v ran; want public.=(lease.id_text,text)", got)
	}
	pinnedBatch(operator)
	if got := ran(); len(got) > 0 {
		t.Errorf("prepared unpinned, run pinned: %v ran; want the operator resolved again", got)
	}

	// A parameter typed as a planted domain keeps that type.
	param := `SELECT count(*) FROM lease.session_lease WHERE account_id = $1::text`
	if _, err := conn.Exec(ctx, param, "acme"); err != nil {
		t.Fatal(err)
	}
	ran()
	pinnedBatch(param)
	if got := ran(); !strings.Contains(fmt.Sprint(got), "public.text") {
		t.Errorf("prepared unpinned, run pinned: %v ran; want public.text's CHECK (this test's premise)", got)
	}

	// Parsed inside a pinned transaction, the same text resolves nothing.
	fresh := param + " AND true"
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{BeginQuery: "BEGIN; " + pin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, fresh, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	pinnedBatch(fresh)
	if got := ran(); len(got) > 0 {
		t.Errorf("parsed in a pinned transaction: %v ran", got)
	}
}

// TestPinSearchPathThroughAPoolerThatIgnoresIt: a pooler that accepts the
// search_path start-up parameter and drops it (ignore_startup_parameters)
// does not make the store think its sessions are pinned: its statements
// are pinned each, and nothing planted runs.
func TestPinSearchPathThroughAPoolerThatIgnoresIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, sh, dsn := plantedDatabase(t)
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{Settings: map[string]string{"ignore_startup_parameters": "search_path"}})
	via, err := b.Via(dsn)
	if err != nil {
		t.Fatal(err)
	}
	store, err := data.OpenWith(ctx, via, data.Options{PinSearchPath: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var path string
	if err := store.Pool().QueryRow(ctx, `SHOW search_path`).Scan(&path); err != nil || path != "public, pg_catalog" {
		t.Fatalf("through the pooler the session's search_path is %q (%v), want the database's: the pooler dropped the pin", path, err)
	}
	if _, err := store.LastEventID(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if ran := sh.Ran(t); len(ran) > 0 {
		t.Errorf("shadows ran: %v", ran)
	}
	// The control: the store's read, on the pool as it is.
	_ = store.Pool().QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM lease.event`).Scan(new(int64))
	if ran := sh.Ran(t); len(ran) == 0 {
		t.Errorf("the store's read, unpinned on the pool, ran no shadow: it proves nothing")
	}
}
