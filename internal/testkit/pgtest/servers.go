package pgtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// OtherServer starts a throwaway PostgreSQL server of t's own, beside the
// harness's, with one migrated database on it, stopped and removed when t
// ends: a second (or third) database of a monitor that watches several,
// which t can stop and restart alone (srv.Stop, srv.Restart).
func OtherServer(t testing.TB, name string) (*pgserver.Server, DB) {
	t.Helper()
	return OtherServerWith(t, name, pgserver.Options{})
}

// OtherServerWith is OtherServer with the server's options (a skewed clock:
// SkewedClock).
func OtherServerWith(t testing.TB, name string, opts pgserver.Options) (*pgserver.Server, DB) {
	t.Helper()
	ctx := context.Background()
	srv, err := pgserver.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start another server: %v", err)
	}
	t.Cleanup(srv.Close)
	url, err := pgserver.CreateMigrated(ctx, srv.URL("postgres"), name)
	if err != nil {
		t.Fatalf("create the database %s on another server: %v", name, err)
	}
	return srv, DB{URL: url, Name: name}
}

// SkewedClock returns the environment that runs a server's clock offset (a
// libfaketime offset such as "+3h") away from this machine's, for
// pgserver.Options.Env. Go reads the time through the vDSO, never through
// libc, so only the database's clock moves.
func SkewedClock(t testing.TB, offset string) []string {
	t.Helper()
	env, err := skewedClock(offset)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func skewedClock(offset string) ([]string, error) {
	for _, pattern := range []string{"/usr/lib/*/faketime/libfaketime.so.1", "/usr/lib/faketime/libfaketime.so.1", "/usr/local/lib/faketime/libfaketime.so.1"} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return []string{"LD_PRELOAD=" + m[0], "FAKETIME=" + offset, "FAKETIME_DONT_FAKE_MONOTONIC=1"}, nil
		}
	}
	return nil, errors.New("libfaketime not found: install it (Debian/Ubuntu: apt-get install faketime)")
}

// ClockAtEnv names the variable that starts the harness's server with its
// clock at a time of day (UTC, "15:04"): the next such time from now, then
// running on. Date-dependent tests run with it at 00:30 (.ci/run), just past
// the day's partition boundary on the database clock, whatever the hour.
const ClockAtEnv = "LEASETOP_TEST_CLOCK_AT"

// clockAt is the server environment for ClockAtEnv's value at (from now).
func clockAt(at string, now time.Time) ([]string, error) {
	tod, err := time.Parse("15:04", at)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: want a UTC time of day such as 00:30", ClockAtEnv, at)
	}
	now = now.UTC()
	next := time.Date(now.Year(), now.Month(), now.Day(), tod.Hour(), tod.Minute(), 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}
	return skewedClock(fmt.Sprintf("%+ds", int64(next.Sub(now).Seconds())))
}
