package supervise

import (
	"slices"
	"testing"
)

func TestEnvDropsDatabaseSecrets(t *testing.T) {
	t.Parallel()
	environ := []string{"PATH=/bin", "DATABASE_URL=postgres://u:p@h/d", "LEASETOP_LISTEN_DSN=postgres://u:p@h:5432/d", "PGPASSWORD=p", "PGSSLPASSWORD=k", "PGHOST=h", "DATABASE_URLX=y"}
	token := []string{"LEASETOP_RUN_ID=r"}
	if got, want := Env(environ, false, token), []string{"PATH=/bin", "PGHOST=h", "DATABASE_URLX=y", "LEASETOP_RUN_ID=r"}; !slices.Equal(got, want) {
		t.Errorf("Env without --pass-db-env = %q, want %q", got, want)
	}
	if got, want := Env(environ, true, token), append(slices.Clone(environ), token...); !slices.Equal(got, want) {
		t.Errorf("Env with --pass-db-env = %q, want %q", got, want)
	}
}

// TestListenDSNPasswordWarns: a password in --listen-dsn is as visible in
// the process list as one in --dsn, so it gets the same warning, naming
// the flag; one in LEASETOP_LISTEN_DSN (the environment) gets none.
