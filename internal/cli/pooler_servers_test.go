package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// bouncerAdmin makes the superuser an admin of the test's PgBouncer, so the
// test can ask PgBouncer itself which server connections it keeps (SHOW
// SERVERS on its admin console).
var bouncerAdmin = map[string]string{"admin_users": "postgres"}

// bouncerServerPIDs returns the backend pids of PgBouncer b's server
// connections to database db, as PgBouncer reports them (SHOW SERVERS,
// remote_pid).
func bouncerServerPIDs(t *testing.T, b *pgserver.Bouncer, db string) []int {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, b.URL("pgbouncer")+"&default_query_exec_mode=simple_protocol")
	if err != nil {
		t.Fatalf("PgBouncer's admin console: %v", err)
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, "SHOW SERVERS")
	if err != nil {
		t.Fatalf("SHOW SERVERS: %v", err)
	}
	maps, err := pgx.CollectRows(rows, pgx.RowToMap)
	if err != nil {
		t.Fatalf("SHOW SERVERS: %v", err)
	}
	var pids []int
	for _, m := range maps {
		if m["database"] != db {
			continue
		}
		pid, err := strconv.Atoi(fmt.Sprint(m["remote_pid"])) // text: the admin console speaks the simple protocol
		if err != nil || pid <= 0 {
			t.Fatalf("SHOW SERVERS row %v: no remote_pid", m)
		}
		pids = append(pids, pid)
	}
	return pids
}

// serverChannels returns, for each of PgBouncer b's server connections to
// database db, the channels it LISTENs on, asked on that connection itself:
// poolSize clients (b's default_pool_size) each open a transaction through
// b and hold it, so PgBouncer must lend each of them a server connection of
// its own, every one it has (it opens no more than poolSize); each reads
// pg_backend_pid() and pg_listening_channels(). Every server connection
// PgBouncer reported before (SHOW SERVERS) must be among those asked.
func serverChannels(t *testing.T, b *pgserver.Bouncer, db pgtest.DB, poolSize int) map[int][]string {
	t.Helper()
	ctx := context.Background()
	before := bouncerServerPIDs(t, b, db.Name)
	via := db.Via(t, b) + "&default_query_exec_mode=exec"
	got := make(map[int][]string)
	for range poolSize {
		conn, err := pgx.Connect(ctx, via)
		if err != nil {
			t.Fatalf("connect through PgBouncer: %v", err)
		}
		defer conn.Close(ctx)
		tx, err := conn.Begin(ctx)
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(b.Dir(), "pgbouncer.log"))
			t.Fatalf("begin through PgBouncer: %v\n%s", err, log)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // read-only, ended with its connection
		var pid int
		var chans []string
		if err := tx.QueryRow(ctx, `SELECT pg_backend_pid(), ARRAY(SELECT pg_listening_channels())`).Scan(&pid, &chans); err != nil {
			t.Fatalf("ask a server connection: %v", err)
		}
		got[pid] = chans
	}
	if len(got) != poolSize {
		t.Fatalf("%d transactions held at once ran on %d server connections, want %d", poolSize, len(got), poolSize)
	}
	for _, pid := range before {
		if _, ok := got[pid]; !ok {
			t.Fatalf("server connection %d (SHOW SERVERS) was not asked: asked %v", pid, got)
		}
	}
	return got
}

// notLinkedWarnings counts PgBouncer's warnings about a server connection
// that sent something while lent to no client ("got packet 'A' from server
// when not linked": a notification for a LISTEN left behind).
func notLinkedWarnings(t *testing.T, b *pgserver.Bouncer) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(b.Dir(), "pgbouncer.log"))
	if err != nil {
		t.Fatalf("read PgBouncer's log: %v", err)
	}
	return strings.Count(string(log), "when not linked")
}
