package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Shadows is a test database whose owner, a lease_app login, has planted
// objects where an unqualified name in someone else's statement could find
// them instead of PostgreSQL's own: in public and in a schema
// named like each login the test names (the "$user" of a search_path). They
// are generated from the catalog, not listed by hand:
//
//   - for every function, aggregate and window function of pg_catalog whose
//     name the project's SQL calls (projectCallNames: every name followed
//     by "(" in its Go and SQL files), a twin (same name and argument types)
//     and variants that are better matches than pg_catalog's: an argument
//     of a core type (text, uuid, timestamptz, interval, bigint, … and what
//     lease's columns and functions use) replaced by a domain of lease's
//     over it or by a core type with an implicit cast to it, and every
//     polymorphic argument (anyelement, anyarray, "any", record, anyenum)
//     replaced by each core type and each type of lease's;
//   - the same for every operator of pg_catalog over a core type or a
//     polymorphic one;
//   - a domain named like each base type of pg_catalog, whose CHECK runs
//     when a value is cast to it by that name.
//
// Each shadow marks its run (Ran) and then does what the object it stands
// in for would have done. SetSearchPath sets the database's search_path as
// its owner may; Control proves that every shadow does run when a statement
// names it unqualified under that path, so that no marker afterwards
// means something.
type Shadows struct {
	db       DB
	admin    *pgx.Conn // the superuser, its search_path pinned at start-up
	owner    string    // the login that owns the database and planted the shadows
	ownerDSN string
	all      []Shadow
	byID     map[int]Shadow
	seen     int64 // the last marker Ran returned
}

// Marker is one run of a shadow.
type Marker struct {
	Shadow Shadow
	RanAs  string // current_user where it ran
	Login  string // session_user
	App    string // application_name of the session
}

func (m Marker) String() string {
	return fmt.Sprintf("%s ran as %s (login %s, %q)", m.Shadow, m.RanAs, m.Login, m.App)
}

// shadowTypes are the core types named by the issue and the commands'
// statements, on top of what lease's columns and functions use.
var shadowTypes = []string{"text", "uuid", "timestamptz", "interval", "int8", "int4", "int2", "bool", "jsonb", "json",
	"name", "float8", "numeric", "oid", "regclass", "bytea", "xid8", "pg_lsn", "pg_snapshot", "timestamp", "date"}

// PlantShadows makes a lease_app login the owner of db and, as that login,
// plants the shadows in public and in a schema named like each of users.
func PlantShadows(t testing.TB, db DB, users ...string) *Shadows {
	t.Helper()
	ctx := context.Background()
	s := &Shadows{db: db, byID: map[int]Shadow{}}
	s.admin = pinnedConn(t, db.URL)
	dblinkDSN, err := pinnedURL(db.URL, "shadowkit")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.Exec(ctx, shadowKit); err != nil {
		t.Fatalf("set up the shadows' kit: %v", err)
	}
	if _, err := s.admin.Exec(ctx, `INSERT INTO shadowkit.settings VALUES ($1, 0)`, dblinkDSN); err != nil {
		t.Fatal(err)
	}
	s.ownerDSN, s.owner = Login(t, db, "lease_app")
	ownerID, dbID := pgx.Identifier{s.owner}.Sanitize(), pgx.Identifier{db.Name}.Sanitize()
	if _, err := s.admin.Exec(ctx, "ALTER DATABASE "+dbID+" OWNER TO "+ownerID); err != nil {
		t.Fatal(err)
	}
	// Migrate takes PUBLIC's USAGE on lease's types back,
	// which alone keeps a lease_* login from planting a shadow over a lease
	// domain. The planter gets it here so that the shadows test the other
	// defence, the pin, as they did before that grant was taken back.
	var leaseTypes []string
	rows, err := s.admin.Query(ctx, `SELECT y.oid::pg_catalog.regtype::pg_catalog.text
		  FROM pg_catalog.pg_type y LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) y.typrelid
		 WHERE y.typnamespace OPERATOR(pg_catalog.=) 'lease'::pg_catalog.regnamespace
		   AND (y.typtype OPERATOR(pg_catalog.=) ANY ('{d,e}'::pg_catalog."char"[]) OR c.relkind OPERATOR(pg_catalog.=) 'c')`)
	if err == nil {
		leaseTypes, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatalf("read lease's types: %v", err)
	}
	for _, typ := range leaseTypes {
		if _, err := s.admin.Exec(ctx, "GRANT USAGE ON TYPE "+typ+" TO "+ownerID); err != nil {
			t.Fatalf("grant the planter USAGE on %s: %v", typ, err)
		}
	}
	// Dropped before Login's cleanup drops the owner: DROP OWNED would
	// lock each of the tens of thousands of shadows in one transaction, more
	// than the server's lock table holds beside the other tests' locks.
	t.Cleanup(func() { dropDatabase(context.Background(), db.Name) })
	names, err := projectCallNames()
	if err != nil {
		t.Fatalf("read the project's SQL: %v", err)
	}
	cat, err := readCatalog(ctx, s.admin, names)
	if err != nil {
		t.Fatal(err)
	}
	core, err := cat.coreTypes(ctx, s.admin, shadowTypes)
	if err != nil {
		t.Fatal(err)
	}
	owner := pinnedConn(t, s.ownerDSN)
	nextID := 0
	for _, schema := range append([]string{"public"}, users...) {
		if schema != "public" {
			id := pgx.Identifier{schema}.Sanitize()
			if _, err := owner.Exec(ctx, "CREATE SCHEMA "+id+"; GRANT USAGE ON SCHEMA "+id+" TO PUBLIC"); err != nil {
				t.Fatalf("create schema %s: %v", schema, err)
			}
		}
		s.plant(t, owner, newPlanner(cat, schema, core, &nextID).plan())
	}
	return s
}

// plant creates planned as the owner, keeping those it could create.
func (s *Shadows) plant(t testing.TB, owner *pgx.Conn, planned []Shadow) {
	t.Helper()
	t0 := time.Now()
	ddl := make([]string, len(planned))
	for i, sh := range planned {
		ddl[i] = sh.ddl
	}
	rows, err := owner.Query(context.Background(), `SELECT i, error FROM shadowkit.plant($1)`, ddl)
	if err != nil {
		t.Fatalf("plant: %v", err)
	}
	failed := map[int]string{}
	var (
		i   int
		msg string
	)
	if _, err := pgx.ForEachRow(rows, []any{&i, &msg}, func() error { failed[i-1] = msg; return nil }); err != nil {
		t.Fatalf("plant: %v", err)
	}
	kinds := map[string]int{}
	for i, sh := range planned {
		if _, bad := failed[i]; bad {
			continue
		}
		s.all = append(s.all, sh)
		s.byID[sh.ID] = sh
		kinds[sh.Kind]++
	}
	reasons := map[string]int{}
	for _, msg := range failed {
		reasons[msg]++
		if strings.Contains(msg, "permission denied") {
			// a class of shadows that could not be planted tests nothing
			defer t.Fatalf("the planter may not plant every shadow: %s", msg)
		}
	}
	t.Logf("planted in %s in %s: %v; %d not plantable: %v", planned[0].Schema, time.Since(t0).Round(time.Millisecond), kinds, len(failed), reasons)
}

// SetSearchPath sets the database's search_path as its owner may (ALTER
// DATABASE … SET search_path; RESET for ""). Sessions that start afterwards
// have it.
func (s *Shadows) SetSearchPath(t testing.TB, path string) {
	t.Helper()
	stmt := "ALTER DATABASE " + pgx.Identifier{s.db.Name}.Sanitize() + " RESET search_path"
	if path != "" {
		stmt = "ALTER DATABASE " + pgx.Identifier{s.db.Name}.Sanitize() + " SET search_path = " + path
	}
	owner := pinnedConn(t, s.ownerDSN)
	if _, err := owner.Exec(context.Background(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// Owner returns the login that owns the database and planted the shadows,
// and a URL that connects as it.
func (s *Shadows) Owner() (role, dsn string) { return s.owner, s.ownerDSN }

// Planted returns every shadow planted.
func (s *Shadows) Planted() []Shadow { return s.all }

// Control is the positive control: as the login dsn connects as, under the
// database's search_path, it names every shadow of schema unqualified with
// exactly its argument types, and fails t unless exactly those shadows ran
// that the path lets win: every one when schema comes before pg_catalog in
// the session's path, else every one but the twins. schema must be the
// first schema of the path that holds shadows for that login ("$user"'s
// when it has one, else public). It returns how many ran.
func (s *Shadows) Control(t testing.TB, dsn, schema string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var (
		path []string
		who  string
	)
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.current_schemas(true)::pg_catalog.text[], CURRENT_USER::pg_catalog.text`).Scan(&path, &who); err != nil {
		t.Fatal(err)
	}
	before := slices.Index(path, schema) >= 0 && slices.Index(path, schema) < slices.Index(path, "pg_catalog")
	var calls []string
	want := map[int]bool{}
	for _, sh := range s.all {
		if sh.Schema != schema {
			continue
		}
		calls = append(calls, sh.call)
		if before || !sh.Twin {
			want[sh.ID] = true
		}
	}
	if len(calls) == 0 {
		t.Fatalf("no shadows in schema %s", schema)
	}
	if _, err := s.admin.Exec(ctx, `TRUNCATE shadowkit.controlled`); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT call, error FROM shadowkit.control($1)`, calls)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	var call, msg string
	failed := map[string]string{} // a call that failed: the object pg_catalog's, or the shadow broken
	if _, err := pgx.ForEachRow(rows, []any{&call, &msg}, func() error { failed[call] = msg; return nil }); err != nil {
		t.Fatalf("control: %v", err)
	}
	var ran []int
	if err := s.admin.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT shadow), '{}') FROM shadowkit.controlled`).Scan(&ran); err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, id := range ran {
		got[id] = true
	}
	var missing, extra []string
	for _, sh := range s.all {
		switch {
		case want[sh.ID] && !got[sh.ID]:
			why := sh.call
			if msg, ok := failed[sh.call]; ok {
				why += ": " + msg
			}
			missing = append(missing, sh.Sig+" ("+why+")")
		case !want[sh.ID] && got[sh.ID]:
			extra = append(extra, sh.Sig)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		t.Errorf("control as %s under search_path %v: %d of %d shadows of %s ran, want %d; did not run: %s; ran but should not: %s",
			who, path, len(got), len(calls), schema, len(want), firstFew(missing), firstFew(extra))
	}
	return len(got)
}

// Ran returns the shadows that ran since the last call (once per shadow and
// session), oldest first.
func (s *Shadows) Ran(t testing.TB) []Marker {
	t.Helper()
	ctx := context.Background()
	rows, err := s.admin.Query(ctx, `SELECT n, shadow, ran_as, login, app FROM shadowkit.ran WHERE n > $1 ORDER BY n`, s.seen)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out []Marker
		id  int
		m   Marker
	)
	if _, err := pgx.ForEachRow(rows, []any{&s.seen, &id, &m.RanAs, &m.Login, &m.App}, func() error {
		m.Shadow = s.byID[id]
		out = append(out, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.Exec(ctx, `UPDATE shadowkit.settings SET gen = gen + 1`); err != nil {
		t.Fatal(err)
	}
	return out
}

func firstFew(s []string) string {
	if len(s) > 8 {
		return strings.Join(s[:8], "; ") + fmt.Sprintf("; and %d more", len(s)-8)
	}
	return strings.Join(s, "; ")
}

// pinnedURL is dsn with its search_path pinned at start-up and an
// application_name.
func pinnedURL(dsn, app string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", "the test URL", err)
	}
	q := u.Query()
	q.Set("options", "-csearch_path=pg_catalog,pg_temp")
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// pinnedConn connects with dsn, its search_path pinned at start-up: the
// kit's own statements resolve nothing planted. Closed when t ends.
func pinnedConn(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
