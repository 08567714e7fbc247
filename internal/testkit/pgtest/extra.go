package pgtest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// NewURL creates a fresh migrated database without a *testing.T, for
// runnable Examples (which run after Main has started the server). It
// returns the database's URL and a function that drops it.
func NewURL() (string, func(), error) {
	ctx := context.Background()
	name, err := newDatabase(ctx, true)
	if err != nil {
		return "", nil, err
	}
	return pgserver.WithDatabase(h.adminURL, name), func() { dropDatabase(ctx, name) }, nil
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
