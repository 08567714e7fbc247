// Package pgtest gives each test its own migrated database on a real
// PostgreSQL server.
//
// A test package calls Main from TestMain. Main starts one throwaway server
// (internal/pgserver) for the package's test binary, migrates a template
// database once, and stops the server and removes its files when the tests
// end, also on SIGINT/SIGTERM. Set LEASETOP_TEST_DATABASE_URL to use an
// existing server instead (its user needs CREATEDB and CREATEROLE), or
// LEASETOP_TEST_CLOCK_AT=00:30 to run the harness's server with its clock at
// the next 00:30 UTC (ClockAtEnv).
//
// When no server can be started the tests fail, never skip, with a message
// that says how to install PostgreSQL.
//
// PlantShadows turns a test's database into an attacker's: its owner plants
// a shadow of every function, operator and type name leasetop's statements
// could resolve, each marking its run, and sets the search_path.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
)

const templateDB = "leasetop_template"

// harness is the package-wide server state set up by Main.
type harness struct {
	adminURL string           // superuser URL to the maintenance database
	server   *pgserver.Server // nil with LEASETOP_TEST_DATABASE_URL
	env      []string         // the server's environment: its clock (ClockAtEnv)
	err      error            // why no server is available
	counter  atomic.Int64     // database name suffix
	prefix   string           // database name prefix, unique per test binary
	mu       sync.Mutex       // serialises CREATE DATABASE ... TEMPLATE
}

var h harness // set once by Main before any test runs; read-only afterwards

// Main starts the server, runs the tests and cleans up. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	code := run(m)
	os.Exit(code)
}

func run(m *testing.M) int {
	ctx := context.Background()
	h.prefix = fmt.Sprintf("t%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if dsn := os.Getenv("LEASETOP_TEST_DATABASE_URL"); dsn != "" {
		h.adminURL = dsn
	} else {
		var opts pgserver.Options
		if at := os.Getenv(ClockAtEnv); at != "" {
			if h.env, h.err = clockAt(at, time.Now()); h.err != nil {
				return m.Run()
			}
		}
		opts.Env = h.env
		srv, err := pgserver.Start(ctx, opts)
		if err != nil {
			h.err = err
			return m.Run() // every test that needs a database fails with h.err
		}
		h.server = srv
		h.adminURL = srv.URL("postgres")
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			if _, ok := <-stop; ok {
				srv.Close()
				os.Exit(2)
			}
		}()
		defer func() { signal.Stop(stop); close(stop); srv.Close() }()
	}
	if err := createTemplate(ctx); err != nil {
		h.err = err
	}
	code := m.Run()
	if h.server == nil && h.err == nil {
		dropTemplate(ctx)
	}
	return code
}

func templateName() string { return h.prefix + "_" + templateDB }

// createTemplate makes a migrated database that every test database copies.
func createTemplate(ctx context.Context) error {
	if _, err := pgserver.CreateMigrated(ctx, h.adminURL, templateName()); err != nil {
		return fmt.Errorf("template database: %w", err)
	}
	return nil
}

func dropTemplate(ctx context.Context) { dropDatabase(ctx, templateName()) }

// newDatabase creates a fresh database, a copy of the migrated template when
// migrated is true, and returns its name.
func newDatabase(ctx context.Context, migrated bool) (string, error) {
	if h.err != nil {
		return "", fmt.Errorf("no PostgreSQL for tests: %w", h.err)
	}
	if h.adminURL == "" {
		return "", errors.New("pgtest: call pgtest.Main(m) from TestMain")
	}
	name := fmt.Sprintf("%s_%d", h.prefix, h.counter.Add(1))
	conn, err := pgx.Connect(ctx, h.adminURL)
	if err != nil {
		return "", fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if migrated {
		stmt += " TEMPLATE " + pgx.Identifier{templateName()}.Sanitize()
	}
	h.mu.Lock() // a template database can be copied by one CREATE DATABASE at a time
	_, err = conn.Exec(ctx, stmt)
	h.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("create test database: %w", err)
	}
	return name, nil
}

// dropDatabase drops a database the harness made, if it can.
func dropDatabase(ctx context.Context, name string) {
	conn, err := pgx.Connect(ctx, h.adminURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// DB is one test's database.
type DB struct {
	// URL connects to the test database as the superuser.
	URL string
	// Name is the database name.
	Name string
}

// New creates a fresh migrated database for t and drops it when t ends.
func New(t testing.TB) DB {
	t.Helper()
	return create(t, true)
}

// NewEmpty creates a fresh database without the lease schema.
func NewEmpty(t testing.TB) DB {
	t.Helper()
	return create(t, false)
}

func create(t testing.TB, migrated bool) DB {
	t.Helper()
	ctx := context.Background()
	name, err := newDatabase(ctx, migrated)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropDatabase(ctx, name) })
	return DB{URL: pgserver.WithDatabase(h.adminURL, name), Name: name}
}

// Pool opens a pool on the test database, closed when t ends.
func (db DB) Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), db.URL)
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Conn opens one independent connection on the test database, closed when t
// ends.
func (db DB) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db.URL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Store opens a data.Store on the test database, closed when t ends.
func (db DB) Store(t testing.TB) *data.Store {
	t.Helper()
	s, err := data.Open(context.Background(), db.URL)
	if err != nil {
		t.Fatalf("data.Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// RequireServer returns the throwaway server, failing t when the tests run
// against an external server that they cannot stop and restart.
func RequireServer(t testing.TB) *pgserver.Server {
	t.Helper()
	if h.server == nil {
		t.Fatal("this test stops and restarts PostgreSQL: unset LEASETOP_TEST_DATABASE_URL so the harness starts its own server")
	}
	return h.server
}

// AdminURL returns the superuser URL to the server's maintenance database.
func AdminURL() string { return h.adminURL }
