package cli_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestNothingResolvesOutsidePgCatalogAndLease: a
// lease_app login that owns its database plants, in public and in a schema
// named like each login that runs leasetop, a shadow of every function,
// aggregate, operator and type name leasetop's statements could resolve
// (pgtest.PlantShadows: generated from the catalog, each marking its run),
// and sets the database's search_path, once to put its schemas before
// pg_catalog and once to the default ("$user", public: pg_catalog first,
// where only the better matches win: a lease domain where pg_catalog takes
// text, a concrete type where it takes anyelement). The positive control
// proves first that every shadow runs when a statement
// names it unqualified under that path. Then every command and library path
// runs, directly and through PgBouncer in transaction mode, as the role that
// runs it in production, and no shadow may run.
//
// A path is one line of shadowPaths.
func TestNothingResolvesOutsidePgCatalogAndLease(t *testing.T) {
	t.Parallel()
	for _, sp := range []struct{ name, path string }{
		{"public before pg_catalog", `"$user", public, pg_catalog`},
		{"default search_path", ""},
	} {
		t.Run(sp.name, func(t *testing.T) {
			t.Parallel() // a database and a PgBouncer each
			w := newShadowWorld(t, sp.path)
			for _, p := range shadowPaths {
				for _, via := range p.vias() {
					t.Run(p.name+"/"+via, func(t *testing.T) {
						t.Cleanup(func() { // last: after the path's own cleanups stopped what it started
							for _, m := range w.sh.Ran(t) {
								t.Errorf("shadow ran: %s", m)
							}
						})
						p.run(w.newRun(t, p.role, via))
					})
				}
			}
		})
	}
}

// The connection kinds a path runs on.
const (
	direct    = "direct"
	pgbouncer = "pgbouncer"
)

// shadowPath is one thing leasetop does, as the role that does it.
type shadowPath struct {
	name string
	role string // super, sre (lease_admin), app (lease_app), reader (lease_reader), preempt (lease_preempt)
	run  func(r *pathRun)
	only string // a connection kind it runs on alone ("" both)
}

func (p shadowPath) vias() []string {
	if p.only != "" {
		return []string{p.only}
	}
	return []string{direct, pgbouncer}
}

// shadowPaths is every command and library path. Each line is one path.
var shadowPaths = []shadowPath{
	{name: "library: try, attach, renew, release", role: "app", run: libraryCycle},
	{name: "library: keep-alive batch", role: "app", run: libraryKeepAlive},
	{name: "library: fenced write", role: "app", run: libraryFenced},
	{name: "library: fenced write, database/sql", role: "app", run: libraryFencedSQL},
	{name: "library: wait and queue", role: "app", run: libraryWaitAndQueue},
	{name: "library: ask and hand over", role: "app", run: libraryAsk},
	{name: "library: preempt", role: "preempt", run: libraryPreempt},
	{name: "library: queue for an account's slot", role: "app", run: libraryAccountQueue},
	{name: "library: preempt for an account's slot", role: "preempt", run: libraryPreemptForSlot},
	{name: "library: forged notification", role: "app", run: libraryForged},
	{name: "monitor feed", role: "reader", run: monitorFeed},
	{name: "monitor keys", role: "sre", run: monitorKeys},
	{name: "exporter scrape", role: "reader", run: exporterScrape},
	{name: "migrate", role: "super", run: command(0, "migrate")},
	{name: "maintain", role: "sre", run: command(0, "maintain")},
	{name: "ls", role: "sre", run: held(command(0, "ls"))},
	{name: "ls as superuser", role: "super", run: held(command(0, "ls"))},
	{name: "ls --json", role: "sre", run: held(command(0, "ls", "--json"))},
	{name: "ls --account --session", role: "sre", run: held(command(0, "ls", "--account", "{account}", "--session", "{session}"))},
	{name: "ls --at now", role: "super", run: held(command(0, "ls", "--at", "now"))},
	{name: "ls --at now as sre", role: "sre", run: held(command(0, "ls", "--at", "now"))},
	{name: "events", role: "sre", run: held(command(0, "events", "--limit", "50"))},
	{name: "events --since --kind --account", role: "sre", run: held(command(0, "events", "--since", "10m ago", "--kind", "acquired,released", "--account", "{account}", "--session", "{session}"))},
	{name: "events --follow", role: "sre", run: eventsFollow},
	{name: "release", role: "sre", run: held(command(0, "release", "--account", "{account}", "--session", "{session}", "--reason", "audit"))},
	{name: "limit set", role: "sre", run: command(0, "limit", "set", "{account}", "--pool", "deep", "3")},
	{name: "limit ls --json", role: "reader", run: atLimit(command(0, "limit", "ls", "--json"))},
	{name: "limit rm", role: "sre", run: atLimit(command(0, "limit", "rm", "{account}"))},
	{name: "ls at a limit", role: "reader", run: atLimit(command(0, "ls"))},
	{name: "run: at a limit", role: "app", run: atLimit(runCommand(3, "--pool", "deep", "--", "true"))},
	{name: "run: granted", role: "app", run: runCommand(0, "--", "true")},
	{name: "run: refused", role: "app", run: held(runCommand(3, "--", "true"))},
	{name: "run: queued", role: "app", run: runQueued},
	{name: "run: ask", role: "app", run: runAsk},
	{name: "library: send, messages, ack, cancel, follow", role: "app", run: libraryInbox},
	{name: "run's command: inbox; send --wait acked; send --cancel", role: "app", run: runInbox},
	{name: "run --on-busy steer", role: "app", run: runSteer},
	{name: "follow", role: "reader", run: followCommand},
	{name: "demo --headless", role: "super", run: demoHeadless},
	{name: "bench", role: "super", run: benchTiny, only: direct},
}

// shadowWorld is one database with the shadows planted and its search_path
// set, its logins, and a PgBouncer started after the search_path was set
// (its server connections take the database's settings when they start).
type shadowWorld struct {
	db      pgtest.DB
	sh      *pgtest.Shadows
	logins  map[string]string // role → URL
	names   map[string]string // role → login name
	bouncer *pgserver.Bouncer
	admin   *data.Store // the superuser, its search_path pinned at start-up: the paths' set-up
	keys    int
}

func newShadowWorld(t *testing.T, searchPath string) *shadowWorld {
	t.Helper()
	w := &shadowWorld{db: pgtest.New(t), logins: map[string]string{}, names: map[string]string{}}
	w.logins["super"], w.names["super"] = w.db.URL, "postgres"
	var users []string
	for role, group := range map[string]string{"sre": "lease_admin", "app": "lease_app", "reader": "lease_reader", "preempt": "lease_app"} {
		dsn, name := pgtest.Login(t, w.db, group)
		w.logins[role], w.names[role] = dsn, name
		if role != "preempt" { // the preempting login resolves in public
			users = append(users, name)
		}
	}
	if _, err := w.db.Conn(t).Exec(context.Background(), "GRANT lease_preempt TO "+pgx.Identifier{w.names["preempt"]}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	w.sh = pgtest.PlantShadows(t, w.db, append(users, "postgres")...)
	t.Logf("planted %d shadows in %s", len(w.sh.Planted()), time.Since(t0).Round(time.Millisecond))
	w.sh.SetSearchPath(t, searchPath)
	t0 = time.Now()
	_, ownerDSN := w.sh.Owner()
	n := w.sh.Control(t, ownerDSN, "public") + w.sh.Control(t, w.logins["app"], w.names["app"])
	t.Logf("positive control: %d shadows ran when named, in %s", n, time.Since(t0).Round(time.Millisecond))
	var err error
	if w.admin, err = data.OpenWith(context.Background(), w.db.URL, data.Options{PinSearchPath: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.admin.Close)
	w.bouncer = pgtest.Bouncer(t, pgserver.BouncerOptions{})
	if m := w.sh.Ran(t); len(m) > 0 {
		t.Fatalf("shadows ran while setting up: %v", m)
	}
	return w
}

// dsn is role's URL on the connection kind via.
func (w *shadowWorld) dsn(t *testing.T, role, via string) string {
	t.Helper()
	dsn, ok := w.logins[role]
	if !ok {
		t.Fatalf("no role %q", role)
	}
	if via == direct {
		return dsn
	}
	u, err := w.bouncer.Via(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// newRun is one path's run: its own key, the role's URL.
func (w *shadowWorld) newRun(t *testing.T, role, via string) *pathRun {
	w.keys++
	return &pathRun{t: t, ctx: context.Background(), w: w, role: role, via: via, dsn: w.dsn(t, role, via),
		key: data.Key{Account: fmt.Sprintf("acct-%d", w.keys), Session: "sess"}}
}
