package data_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestTranslate provokes each kind of database error on a real server and
// checks what callers outside the package see: the sentinel or type they
// match with errors.Is/As, and the retry predicates. Every call goes through
// this package (or data.Translate, for a statement run on a connection of
// its own), so the test also proves that each path translates. It runs
// alone: it dials a port it has just closed, which a parallel test's
// listener could take.
func TestTranslate(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	nobodyURL, _ := pgtest.Login(t, db, "")
	nobody := pgtest.LazyStore(t, nobodyURL)
	readerURL, _ := pgtest.Login(t, db, "lease_reader")
	reader := pgtest.LazyStore(t, readerURL)
	appURL, _ := pgtest.Login(t, db, "lease_app")
	app := pgtest.LazyStore(t, appURL)
	admin := db.Conn(t)
	empty := data.New(pgtest.NewEmpty(t).Pool(t))
	key := data.Key{Account: "acme", Session: "s1"}
	refused := fmt.Sprintf("postgres://u:hunter2@127.0.0.1:%d/db?connect_timeout=2", closedPort(t))
	wrongPassword := mustConnConfig(t, db.URL)
	wrongPassword.Password = "hunter2"
	noDatabase := mustConnConfig(t, db.URL)
	noDatabase.Database = "no_such_db_" + db.Name

	denied := func(message string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var pe *data.PermissionError
			if !errors.As(err, &pe) || pe.Message != message {
				t.Errorf("err = %v, want a *PermissionError with Message %q", err, message)
			}
		}
	}
	connectFailure := func(host string, user, database, reason string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var ce *data.ConnectError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConnectError", err)
			}
			if ce.Host != host || ce.Port == 0 || ce.User != user || ce.Database != database || ce.Reason != reason {
				t.Errorf("ConnectError = %+v, want host %q, a port, user %q, database %q, reason %q",
					*ce, host, user, database, reason)
			}
		}
	}
	badDSN := func(t *testing.T, err error) {
		var de *data.DSNError
		if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), "invalid database URL: ") || de.Reason == "" {
			t.Errorf("err = %v, want a *DSNError saying invalid database URL and why", err)
		}
	}

	for _, tc := range []struct {
		name       string
		call       func() error
		is         error // a sentinel the error must match, or nil
		permanent  bool
		notApplied bool
		check      func(*testing.T, error)
	}{
		{"snapshot as a role without grants", func() error { _, err := nobody.Snapshot(ctx); return err },
			data.ErrPermission, true, true, denied("permission denied for schema lease")},
		{"events as a role without grants", func() error { _, err := nobody.EventsSince(ctx, 0, 10); return err },
			data.ErrPermission, true, true, denied("permission denied for schema lease")},
		{"read sync as a role without grants", func() error { _, err := nobody.ReadSync(ctx, data.SyncQuery{}); return err },
			data.ErrPermission, true, true, denied("permission denied for schema lease")},
		{"lease as a role without grants", func() error { _, _, _, err := nobody.Lease(ctx, key); return err },
			data.ErrPermission, true, true, denied("permission denied for schema lease")},
		{"acquire as lease_reader", func() error {
			_, err := reader.Acquire(ctx, key, uuid.New(), time.Minute, "h")
			return err
		}, data.ErrPermission, true, true, denied("permission denied for function acquire")},
		{"force release as lease_app", func() error { _, err := app.ForceReleaseAny(ctx, key, "r"); return err },
			data.ErrPermission, true, true, denied("permission denied for function force_release")},
		{"notify setting as lease_app", func() error { return data.SetNotifyRenewals(ctx, app.Pool(), true) },
			data.ErrPermission, true, true, denied("permission denied for function set_notify_renewals")},
		{"migrate as lease_app", func() error {
			conn, err := data.Connect(ctx, mustConnConfig(t, appURL))
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			return data.Migrate(ctx, conn)
		}, data.ErrPermission, true, true, denied("permission denied for database " + db.Name)},
		{"invalid argument raised by a lease function", func() error {
			_, err := admin.Exec(ctx, `SELECT lease.acquire('', 's', gen_random_uuid(), '1 min', '')`)
			return data.Translate(err)
		}, data.ErrInvalid, true, true, nil},
		{"no lease schema", func() error { _, err := empty.Snapshot(ctx); return err },
			data.ErrSchema, true, true, nil},
		{"syntax error", func() error { _, err := admin.Exec(ctx, `SELEC 1`); return data.Translate(err) },
			nil, true, true, nil},
		{"connection terminated by the server", func() error {
			conn := db.Conn(t)
			_, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pg_backend_pid())`)
			return data.Translate(err)
		}, nil, false, true, nil},
		{"connection refused", func() error { _, err := data.Open(ctx, refused); return err },
			nil, false, false, connectFailure("127.0.0.1", "u", "db", "connection refused")},
		{"connection refused, single connection", func() error {
			_, err := data.Connect(ctx, mustConnConfig(t, refused))
			return err
		}, nil, false, false, connectFailure("127.0.0.1", "u", "db", "connection refused")},
		{"read sync, connection refused", func() error {
			_, err := pgtest.LazyStore(t, refused).ReadSync(ctx, data.SyncQuery{})
			return err
		}, nil, false, false, connectFailure("127.0.0.1", "u", "db", "connection refused")},
		{"wrong password", func() error { _, err := data.Connect(ctx, wrongPassword); return err },
			nil, true, true, connectFailure(wrongPassword.Host, wrongPassword.User, db.Name,
				fmt.Sprintf("password authentication failed for user %q", wrongPassword.User))},
		{"no such database", func() error { _, err := data.Connect(ctx, noDatabase); return err },
			nil, true, true, connectFailure(noDatabase.Host, noDatabase.User, noDatabase.Database,
				fmt.Sprintf("database %q does not exist", noDatabase.Database))},
		{"bad URL", func() error { _, err := data.Open(ctx, "postgres://u:hunter2@[::1/db"); return err },
			nil, true, false, badDSN},
		{"bad keyword/value string", func() error {
			_, err := data.ParseConnConfig("host=h port=notaport password=hunter2")
			return err
		}, nil, true, false, badDSN},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil {
				t.Fatal("err = nil, want an error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is(err, %v)", err, tc.is)
			}
			if tc.is != data.ErrPermission && errors.Is(err, data.ErrPermission) {
				t.Errorf("err = %v is ErrPermission, want not", err)
			}
			if got := data.Permanent(err); got != tc.permanent {
				t.Errorf("Permanent(%v) = %v, want %v", err, got, tc.permanent)
			}
			if got := data.NotApplied(err); got != tc.notApplied {
				t.Errorf("NotApplied(%v) = %v, want %v", err, got, tc.notApplied)
			}
			if again := data.Translate(err); again != err {
				t.Errorf("Translate(Translate(err)) = %v, want the same error %v", again, err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("err = %v, shows the password", err)
			}
			if tc.check != nil {
				tc.check(t, err)
			}
		})
	}
}

// TestListenerReportsConnectError: the listener's state carries the same
// translated error as a Store call. It runs alone, as TestTranslate does.
func TestListenerReportsConnectError(t *testing.T) {
	store := pgtest.LazyStore(t, fmt.Sprintf("postgres://u:hunter2@127.0.0.1:%d/db", closedPort(t)))
	lis := store.NewListener(data.ListenerConfig{ReconnectDelay: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = lis.Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.After(10 * time.Second)
	for {
		st := lis.State()
		var ce *data.ConnectError
		if st.Err != nil {
			if !errors.As(st.Err, &ce) || ce.Reason != "connection refused" {
				t.Fatalf("listener state Err = %v, want a *ConnectError, connection refused", st.Err)
			}
			return
		}
		select {
		case <-lis.StateChanged():
		case <-deadline:
			t.Fatalf("listener state = %+v after 10 s, want a connect error", st)
		}
	}
}

// closedPort returns a local TCP port that nothing listens on: one the
// kernel just handed out and that was closed again.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// mustConnConfig parses dsn or fails the test.
func mustConnConfig(t *testing.T, dsn string) *pgx.ConnConfig {
	t.Helper()
	cfg, err := data.ParseConnConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
