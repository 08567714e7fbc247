package cli

import (
	"slices"
	"testing"
)

func TestDSNHasPassword(t *testing.T) {
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
	environ := []string{"PATH=/bin", "DATABASE_URL=postgres://u:p@h/d", "PGPASSWORD=p", "PGSSLPASSWORD=k", "PGHOST=h", "DATABASE_URLX=y"}
	token := []string{"LEASETOP_RUN_ID=r"}
	if got, want := childEnv(environ, false, token), []string{"PATH=/bin", "PGHOST=h", "DATABASE_URLX=y", "LEASETOP_RUN_ID=r"}; !slices.Equal(got, want) {
		t.Errorf("childEnv without --pass-db-env = %q, want %q", got, want)
	}
	if got, want := childEnv(environ, true, token), append(slices.Clone(environ), token...); !slices.Equal(got, want) {
		t.Errorf("childEnv with --pass-db-env = %q, want %q", got, want)
	}
}
