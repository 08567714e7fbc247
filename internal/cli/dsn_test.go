package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDSNHasPassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dsn  string
		want bool
	}{
		{"postgres://app:s3cret@db.example/leases", true},
		{"postgresql://app:s3cret@db.example:5432/leases?sslmode=require", true},
		{"postgres://app:@db.example/leases", true}, // an empty password is still one given
		{"postgres://app@db.example/leases", false},
		{"postgres://db.example/leases?password=s3cret", true},
		{"postgres://db.example/leases", false},
		{"postgres://u:hunter2@[::1/db", true}, // malformed: found by hand
		{"host=db user=app password=s3cret dbname=leases", true},
		{"host=db user=app password = 's3 cret'", true},
		{"password=s3cret", true},
		{"host=db user=app dbname=leases", false},
		{"host=db user=passwordless dbname=leases", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := dsnHasPassword(tt.dsn); got != tt.want {
			t.Errorf("dsnHasPassword(%q) = %v, want %v", tt.dsn, got, tt.want)
		}
	}
}

func TestChildEnvDropsDatabaseSecrets(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "DATABASE_URL=postgres://u:p@h/d", "LEASETOP_LISTEN_DSN=postgres://u:p@h:5432/d", "PGPASSWORD=p", "PGSSLPASSWORD=k", "PGHOST=h", "DATABASE_URLX=y"}
	token := []string{"LEASETOP_RUN_ID=r"}
	if got, want := childEnv(environ, false, token), []string{"PATH=/bin", "PGHOST=h", "DATABASE_URLX=y", "LEASETOP_RUN_ID=r"}; !slices.Equal(got, want) {
		t.Errorf("childEnv without --pass-db-env = %q, want %q", got, want)
	}
	if got, want := childEnv(environ, true, token), append(slices.Clone(environ), token...); !slices.Equal(got, want) {
		t.Errorf("childEnv with --pass-db-env = %q, want %q", got, want)
	}
}

// TestListenDSNPasswordWarns: a password in --listen-dsn is as visible in
// the process list as one in --dsn, so it gets the same warning, naming
// the flag; one in LEASETOP_LISTEN_DSN (the environment) gets none.
func TestListenDSNPasswordWarns(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		flag, env string
		warn      bool
	}{
		{flag: "postgres://app:s3cret@db/leases", warn: true},
		{flag: "host=db password=s3cret dbname=leases", warn: true},
		{flag: "postgres://app@db/leases"},
		{env: "postgres://app:s3cret@db/leases"},
	} {
		var stderr bytes.Buffer
		env := Env{Stderr: &stderr, Getenv: func(k string) string {
			if k == "LEASETOP_LISTEN_DSN" {
				return tt.env
			}
			return ""
		}}
		var poll time.Duration
		f := &listenFlags{dsn: &tt.flag, poll: &poll}
		opt, err := f.options(env)
		if err != nil {
			t.Fatalf("options(--listen-dsn %q): %v", tt.flag, err)
		}
		if want := tt.flag + tt.env; opt.ListenDSN != want {
			t.Errorf("ListenDSN = %q, want %q", opt.ListenDSN, want)
		}
		warned := strings.HasPrefix(stderr.String(), "leasetop: warning: --listen-dsn carries a password")
		if warned != tt.warn || strings.Contains(stderr.String(), "s3cret") {
			t.Errorf("--listen-dsn %q, LEASETOP_LISTEN_DSN %q: stderr %q, want the warning %v and never the password", tt.flag, tt.env, stderr.String(), tt.warn)
		}
	}
}
