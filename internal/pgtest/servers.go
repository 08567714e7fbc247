package pgtest

import (
	"context"
	"testing"

	"github.com/leasetop/leasetop/internal/pgserver"
)

// OtherServer starts a throwaway PostgreSQL server of t's own, beside the
// harness's, with one migrated database on it, stopped and removed when t
// ends: a second (or third) database of a monitor that watches several,
// which t can stop and restart alone (srv.Stop, srv.Restart).
func OtherServer(t testing.TB, name string) (*pgserver.Server, DB) {
	t.Helper()
	ctx := context.Background()
	srv, err := pgserver.Start(ctx, pgserver.Options{})
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
