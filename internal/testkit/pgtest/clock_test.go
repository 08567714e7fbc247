package pgtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// TestClockAt: LEASETOP_TEST_CLOCK_AT's value names the next such UTC time
// of day, tomorrow's when today's has passed, and bad values are refused
// naming the variable; a server started with its environment reads that
// time on its clock.
func TestClockAt(t *testing.T) {
	now := time.Date(2026, 12, 7, 17, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		at, offset string
	}{
		{"00:30", "FAKETIME=+27000s"}, // tonight
		{"17:30", "FAKETIME=+1800s"},  // later today
		{"16:30", "FAKETIME=+84600s"}, // passed: tomorrow's
		{"17:00", "FAKETIME=+86400s"}, // now: tomorrow's
	} {
		env, err := clockAt(tt.at, now)
		if err != nil || !strings.Contains(strings.Join(env, " "), tt.offset) {
			t.Errorf("clockAt(%q) = %q, %v; want %s", tt.at, env, err, tt.offset)
		}
	}
	for _, bad := range []string{"0030", "25:00", "noon", ""} {
		if _, err := clockAt(bad, now); err == nil || !strings.Contains(err.Error(), ClockAtEnv) {
			t.Errorf("clockAt(%q) = %v, want an error naming %s", bad, err, ClockAtEnv)
		}
	}

	env, err := clockAt("00:30", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv, err := pgserver.Start(ctx, pgserver.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var at time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at); err != nil {
		t.Fatal(err)
	}
	// The clock started at 00:30 and has run since: for the time the server
	// took to start, well under an hour.
	if at = at.UTC(); at.Hour() != 0 || at.Minute() < 30 {
		t.Fatalf("the server's clock reads %s, want 00:30 UTC or just after", at.Format(time.RFC3339))
	}
}
