package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/pgtest"
	leasesql "github.com/leasetop/leasetop/sql"
)

// versionJSON is leasetop version --json's object.
type versionJSON struct {
	Leasetop struct {
		Version, Commit, Go, Platform string
	}
	Schema   int
	Database *struct {
		Server     string
		Schema     int
		MigrateDue bool `json:"migrate_due"`
		Newer      bool
	}
}

func readVersion(t *testing.T, dsn string) versionJSON {
	t.Helper()
	out, stderr, code := leasetop(context.Background(), "", "version", "--dsn", dsn, "--json")
	if code != cli.ExitOK {
		t.Fatalf("version --dsn --json: exit %d, stderr %q", code, stderr)
	}
	var v versionJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version --json printed %q: %v", out, err)
	}
	return v
}

// TestVersionWithoutDatabase: version and --version answer offline, with
// the schema version this binary migrates to, and connect to nothing even
// when DATABASE_URL names an unreachable server.
func TestVersionWithoutDatabase(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := leasetop(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1", args...)
		if code != cli.ExitOK || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q; want 0 and nothing", args, code, stderr)
		}
		for _, want := range []string{"leasetop:", fmt.Sprintf("schema:          %d (what leasetop migrate creates)", leasesql.Version)} {
			if !strings.Contains(out, want) {
				t.Errorf("%v printed %q, want %q in it", args, out, want)
			}
		}
		if strings.Contains(out, "database") {
			t.Errorf("%v printed %q: it read a database without --dsn", args, out)
		}
	}
}

// TestVersionAgainstDatabases: version --dsn says where the database's
// schema stands against this binary's: none, one version behind (a real
// version-5 schema: migrate is due, and migrate makes it current), current,
// and one ahead (upgrade leasetop).
func TestVersionAgainstDatabases(t *testing.T) {
	ctx := context.Background()
	behind := pgtest.NewAtVersion(t, leasesql.Version-1)
	ahead := pgtest.New(t)
	if _, err := ahead.Conn(t).Exec(ctx, `UPDATE lease.schema_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		dsn        string
		schema     int
		due, newer bool
		line       string
	}{
		{"none", pgtest.NewEmpty(t).URL, 0, true, false, "database schema: none: run leasetop migrate"},
		{"behind", behind.URL, leasesql.Version - 1, true, false,
			fmt.Sprintf("database schema: %d: migrate is due (leasetop migrate upgrades it to %d)", leasesql.Version-1, leasesql.Version)},
		{"current", pgtest.New(t).URL, leasesql.Version, false, false, fmt.Sprintf("database schema: %d (current)", leasesql.Version)},
		{"ahead", ahead.URL, leasesql.Version + 1, false, true,
			fmt.Sprintf("database schema: %d: newer than this leasetop's %d: upgrade leasetop", leasesql.Version+1, leasesql.Version)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := leasetop(ctx, "", "version", "--dsn", tt.dsn)
			if code != cli.ExitOK || !strings.Contains(out, tt.line+"\n") {
				t.Fatalf("version --dsn: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, stderr, tt.line)
			}
			v := readVersion(t, tt.dsn)
			if v.Database == nil || v.Database.Schema != tt.schema || v.Database.MigrateDue != tt.due || v.Database.Newer != tt.newer {
				t.Errorf("version --json database = %+v, want schema %d, migrate_due %v, newer %v", v.Database, tt.schema, tt.due, tt.newer)
			}
			if v.Schema != leasesql.Version {
				t.Errorf("version --json schema = %d, want %d", v.Schema, leasesql.Version)
			}
		})
	}
	out, stderr, code := leasetop(ctx, behind.URL, "migrate")
	if code != cli.ExitOK {
		t.Fatalf("migrate of the version-%d database: exit %d, stdout %q, stderr %q", leasesql.Version-1, code, out, stderr)
	}
	if v := readVersion(t, behind.URL); v.Database.Schema != leasesql.Version || v.Database.MigrateDue {
		t.Errorf("after migrate, version --json database = %+v, want schema %d and no migrate due", v.Database, leasesql.Version)
	}
}
