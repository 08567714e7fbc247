package pgserver_test

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// startServer starts a throwaway server for one test, closed when it ends.
func startServer(t *testing.T) *pgserver.Server {
	t.Helper()
	s, err := pgserver.Start(context.Background(), pgserver.Options{})
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func sqlstate(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// TestBouncerIsATransactionPooler shows the harness's PgBouncer behaves as
// a production transaction pooler (PgBouncer, RDS Proxy) does: a role made
// on the server logs in through it with its own password, consecutive
// transactions of one client run on different server connections, so pgx's
// default statement cache fails with 42P05 there; it stops with SIGINT and
// comes back on its port.
func TestBouncerIsATransactionPooler(t *testing.T) {
	ctx := context.Background()
	s := startServer(t)
	b, err := s.StartBouncer(ctx, pgserver.BouncerOptions{PoolSize: 1})
	if err != nil {
		t.Fatalf("StartBouncer: %v", err)
	}
	t.Cleanup(b.Close)
	exec(t, connect(t, s.URL("postgres")), `CREATE ROLE app LOGIN PASSWORD 'app-pw'`)

	app, err := b.Via("postgres://app:app-pw@127.0.0.1:1/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	var user string
	if err := connect(t, app).QueryRow(ctx, `SELECT current_user`).Scan(&user); err != nil || user != "app" {
		t.Fatalf("through PgBouncer as app: current_user = %q, %v; want app", user, err)
	}

	// One server connection for two clients: in session mode the second
	// would wait for the first to disconnect. Here both run, on the same
	// server connection, so the second client's statement cache prepares a
	// name the first one's already created there.
	c1, c2 := connect(t, b.URL("postgres")), connect(t, b.URL("postgres"))
	const q = `SELECT $1::int + 1`
	var pid1, pid2, n int
	if err := c1.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&pid1); err != nil {
		t.Fatal(err)
	}
	if err := c2.QueryRow(ctx, `SELECT pg_backend_pid()`, pgx.QueryExecModeSimpleProtocol).Scan(&pid2); err != nil {
		t.Fatal(err)
	}
	if pid1 != pid2 {
		t.Fatalf("two idle clients ran on backends %d and %d with a pool of one: not a transaction pooler", pid1, pid2)
	}
	if err := c1.QueryRow(ctx, q, 1).Scan(&n); err != nil {
		t.Fatalf("client 1: %v", err)
	}
	if err := c2.QueryRow(ctx, q, 1).Scan(&n); sqlstate(err) != "42P05" {
		t.Fatalf("client 2's cached statement on client 1's server connection: err = %v, want SQLSTATE 42P05", err)
	}

	pid := b.PID()
	b.Stop()
	if alive(pid) {
		t.Fatalf("PgBouncer pid %d still running after Stop", pid)
	}
	if _, err := pgx.Connect(ctx, b.URL("postgres")); err == nil {
		t.Fatal("connected through a stopped PgBouncer")
	}
	if err := b.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	connect(t, b.URL("postgres"))
}

// TestStandby shows the harness's standby streams from its primary, is a
// hot standby (reads yes; writes and LISTEN refused with 25006), survives an
// immediate stop and restart, and accepts writes once promoted.
func TestStandby(t *testing.T) {
	ctx := context.Background()
	s := startServer(t)
	primary := connect(t, s.URL("postgres"))
	exec(t, primary, `CREATE TABLE t (v int)`)
	st, err := s.StartStandby(ctx, pgserver.StandbyOptions{})
	if err != nil {
		t.Fatalf("StartStandby: %v", err)
	}
	t.Cleanup(st.Close)
	if st.Port() == s.Port() || st.Dir() == s.Dir() {
		t.Fatalf("standby shares the primary's port or folder")
	}
	exec(t, primary, `INSERT INTO t VALUES (1)`)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := st.WaitReplayed(wctx, s); err != nil {
		t.Fatal(err)
	}
	replica := connect(t, st.URL("postgres"))
	var n int
	if err := replica.QueryRow(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("standby: count = %d, %v; want 1 replayed row", n, err)
	}
	if in, err := st.InRecovery(ctx); err != nil || !in {
		t.Fatalf("standby InRecovery = %v, %v; want true", in, err)
	}
	for _, stmt := range []string{`INSERT INTO t VALUES (2)`, `LISTEN lease_events`} {
		if _, err := replica.Exec(ctx, stmt); sqlstate(err) != "25006" {
			t.Fatalf("standby: %s err = %v, want SQLSTATE 25006", stmt, err)
		}
	}

	pid := st.PID()
	st.StopImmediate()
	if alive(pid) {
		t.Fatalf("standby postmaster %d still running after StopImmediate", pid)
	}
	if err := st.Restart(ctx); err != nil {
		t.Fatalf("restart the standby: %v", err)
	}
	if err := st.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if in, err := st.InRecovery(ctx); err != nil || in {
		t.Fatalf("promoted InRecovery = %v, %v; want false", in, err)
	}
	exec(t, connect(t, st.URL("postgres")), `INSERT INTO t VALUES (3)`)
	if _, err := os.Stat(st.Dir()); err != nil {
		t.Fatalf("standby folder: %v", err)
	}
}
