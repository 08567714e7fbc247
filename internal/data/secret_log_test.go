package data_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
)

// TestStatementLogsAndTheSecret checks what docs/production.md says an
// operator's log settings reveal. With every statement logged (log_min_duration_statement
// = 0), the server logs a call's bind parameters, the run's secret id
// among them; for a login with log_parameter_max_length = 0 (which only a
// superuser may set) it logs none. The first half shows the test can see a
// secret in the log at all.
func TestStatementLogsAndTheSecret(t *testing.T) {
	ctx := context.Background()
	logPath := filepath.Join(t.TempDir(), "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	srv, err := pgserver.Start(ctx, pgserver.Options{Log: logFile})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dbURL, err := pgserver.CreateMigrated(ctx, srv.URL("postgres"), "secrets")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)

	for _, tt := range []struct {
		login    string
		settings string
		logged   bool
	}{
		{"logs_all", "SET log_min_duration_statement = 0", true},
		{"logs_no_values", "SET log_min_duration_statement = 0; ALTER ROLE logs_no_values SET log_parameter_max_length = 0", false},
	} {
		t.Run(tt.login, func(t *testing.T) {
			for _, sql := range []string{
				"CREATE ROLE " + tt.login + " LOGIN PASSWORD 'pw' IN ROLE lease_app",
				"ALTER ROLE " + tt.login + " " + tt.settings,
			} {
				if _, err := admin.Exec(ctx, sql); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
			}
			u, err := url.Parse(dbURL)
			if err != nil {
				t.Fatal(err)
			}
			u.User = url.UserPassword(tt.login, "pw")
			s, err := data.Open(ctx, u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			k, run := data.Key{Account: "a", Session: tt.login}, uuid.New()
			if _, err := s.Acquire(ctx, k, run, time.Minute, "h"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Renew(ctx, k, run, time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Release(ctx, k, run); err != nil {
				t.Fatal(err)
			}
			// The server writes its log line before it answers, so the
			// lines of the calls above are in the file now.
			b, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(b), run.String()); got != tt.logged {
				t.Errorf("secret run id in the server log: %v, want %v", got, tt.logged)
			}
		})
	}
}
