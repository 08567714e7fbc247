package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// TestEveryCommandSaysTheSchemaFirst: against a database one schema version
// behind (a real version-5 schema) and one ahead, every command that opens
// the database stops before doing anything else with exit 6 and one line
// that says what to do: run leasetop migrate, or upgrade leasetop (naming
// this binary's version); it prints nothing on stdout, and run never starts
// its command. migrate refuses the newer schema and leaves it as it is.
func TestEveryCommandSaysTheSchemaFirst(t *testing.T) {
	ctx := context.Background()
	behind := pgtest.NewAtVersion(t, leasesql.Version-1)
	ahead := pgtest.New(t)
	aheadConn := ahead.Conn(t)
	if _, err := aheadConn.Exec(ctx, `UPDATE lease.schema_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	commands := [][]string{
		{"ls"},
		{"ls", "--at", "1m ago"},
		{"events"},
		{"events", "--follow"},
		{"release", "--account", "acme", "--session", "s1", "--reason", "test"},
		{"maintain"},
		{"run", "--account", "acme", "--session", "s1", "--", "touch", marker},
		{"exporter", "--listen", "127.0.0.1:0"},
		{"bench", "--only", "select1", "--duration", "50ms", "--warmup", "0s", "--clients", "1", "--keys", "1"},
		{"demo", "--headless", "--duration", "1s"},
	}
	for _, db := range []struct {
		name, dsn, want string
	}{
		{"behind", behind.URL, fmt.Sprintf("leasetop: lease schema is at version %d, this leasetop needs %d: run leasetop migrate\n", leasesql.Version-1, leasesql.Version)},
		{"ahead", ahead.URL, fmt.Sprintf("is older than the database: its lease schema is at version %d, this leasetop knows %d: upgrade leasetop (leasetop version --dsn URL compares them)\n", leasesql.Version+1, leasesql.Version)},
	} {
		for _, args := range commands {
			t.Run(db.name+"/"+strings.Join(args, " "), func(t *testing.T) {
				out, stderr, code := leasetop(ctx, db.dsn, args...)
				if code != cli.ExitSchema {
					t.Errorf("exit %d, want %d (ExitSchema); stderr %q", code, cli.ExitSchema, stderr)
				}
				if strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "leasetop: ") || !strings.HasSuffix(stderr, db.want) {
					t.Errorf("stderr = %q, want one line ending %q", stderr, db.want)
				}
				if db.name == "ahead" && !strings.Contains(stderr, "this leasetop ") {
					t.Errorf("stderr = %q, want it to name this leasetop's version", stderr)
				}
				if out != "" {
					t.Errorf("stdout = %q, want nothing", out)
				}
				if _, err := os.Stat(marker); err == nil {
					t.Fatalf("run started its command against a database at another schema version")
				}
			})
		}
	}
	out, stderr, code := leasetop(ctx, ahead.URL, "migrate")
	if code != cli.ExitSchema || out != "" || !strings.Contains(stderr, "upgrade leasetop") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("migrate of a newer schema: exit %d, stdout %q, stderr %q; want 6, nothing, one line saying upgrade leasetop", code, out, stderr)
	}
	var v int
	if err := aheadConn.QueryRow(ctx, `SELECT version FROM lease.schema_version`).Scan(&v); err != nil || v != leasesql.Version+1 {
		t.Errorf("after migrate, the newer schema's version = %d (%v), want %d kept", v, err, leasesql.Version+1)
	}
}
