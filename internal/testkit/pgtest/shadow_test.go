package pgtest_test

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestShadowsRunWhenNamed is the fixture's positive control on its own:
// every planted shadow runs when a statement names it unqualified, under
// both search paths a database owner may set.
func TestShadowsRunWhenNamed(t *testing.T) {
	db := pgtest.New(t)
	appDSN, app := pgtest.Login(t, db, "lease_app")
	t0 := time.Now()
	sh := pgtest.PlantShadows(t, db, app)
	t.Logf("planted %d shadows in %s", len(sh.Planted()), time.Since(t0))
	_, ownerDSN := sh.Owner()
	for _, path := range []string{`"$user", public, pg_catalog`, ``} {
		sh.SetSearchPath(t, path)
		t0 := time.Now()
		n := sh.Control(t, ownerDSN, "public") + sh.Control(t, appDSN, app)
		t.Logf("search_path %q: %d shadows ran in %s", path, n, time.Since(t0))
	}
}
