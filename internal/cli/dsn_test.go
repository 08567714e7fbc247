package cli

import (
	"bytes"
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
