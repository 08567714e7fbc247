package pgtest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// NewURL creates a fresh migrated database without a *testing.T, for
// runnable Examples (which run after Main has started the server). It
// returns the database's URL and a function that drops it.
func NewURL() (string, func(), error) {
	if h.err != nil {
		return "", nil, fmt.Errorf("no PostgreSQL for tests: %w", h.err)
	}
	if h.adminURL == "" {
		return "", nil, fmt.Errorf("pgtest: call pgtest.Main(m) from TestMain")
	}
	ctx := context.Background()
	name := fmt.Sprintf("%s_%d", h.prefix, h.counter.Add(1))
	conn, err := pgx.Connect(ctx, h.adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	h.mu.Lock()
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{templateName()}.Sanitize())
	h.mu.Unlock()
	if err != nil {
		return "", nil, fmt.Errorf("create test database: %w", err)
	}
	drop := func() {
		c, err := pgx.Connect(ctx, h.adminURL)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	return pgserver.WithDatabase(h.adminURL, name), drop, nil
}

// MainWith is Main with a setup step before the tests (for example building a
// binary that process tests run) and its cleanup after them. A setup error
// fails the test binary before any test runs.
func MainWith(m *testing.M, setup func() (cleanup func(), err error)) {
	cleanup, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test setup:", err)
		os.Exit(1)
	}
	code := run(m)
	cleanup()
	os.Exit(code)
}
