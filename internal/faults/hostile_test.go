package faults_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// login is a login role made for a test, and the rig's database URL as it.
type login struct {
	role, url, password string
}

// login creates a login role (pgtest.LoginNamed) named prefix_<database>,
// short enough for the monitor's actor column, that is a member of group
// unless group is "", dropped when the test ends.
func (r *rig) login(prefix, group string) login {
	r.t.Helper()
	db := r.db()
	role := prefix + "_" + db.Name
	dsn := pgtest.LoginNamed(r.t, db, role, group)
	u, err := url.Parse(dsn)
	if err != nil {
		r.t.Fatal(err)
	}
	password, _ := u.User.Password()
	return login{role: role, url: dsn, password: password}
}

// stranger returns a connection to the rig's database as a fresh login role
// with no lease role at all: NOTIFY needs no privilege, so any client that
// can connect can publish on lease_events.
func (r *rig) stranger() *pgx.Conn {
	r.t.Helper()
	l := r.login("stranger", "")
	conn, err := pgx.Connect(context.Background(), l.url)
	if err != nil {
		r.t.Fatalf("connect as %s: %v", l.role, err)
	}
	r.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// eventJSON is a payload shaped like lease.event_json's.
func eventJSON(id int64, kind, session string, run uuid.UUID) string {
	return fmt.Sprintf(`{"id":%d,"at":"2030-01-01T00:00:00Z","kind":%q,"account_id":%q,"session_id":%q,"run_id":%q,`+
		`"fence":1,"expires_at":"2100-01-01T00:00:00Z","holder":"forged","actor":"postgres"}`, id, kind, account, session, run)
}

// Malformed and foreign payloads on lease_events, published by a client
// with no lease role: the monitor drops each one and counts it, stays LIVE,
// and its picture stays the database's.
func TestMalformedNotifications(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	m := r.startMirror(r.url, mirrorCfg())
	run := uuid.New()
	payloads := []string{
		"",
		"not json",
		"{",
		`{"hello":"world"}`,
		`[1,2,3]`,
		`null`,
		`{"id":"1","kind":"acquired"}`,
		`{"id":1e400,"kind":"acquired","account_id":"faults","session_id":"s","run_id":"` + run.String() + `"}`,
		eventJSON(99, "exploded", "s", run),
		eventJSON(-5, "acquired", "s", run),
		eventJSON(0, "acquired", "s", run),
		eventJSON(99, "acquired", "", run),
		eventJSON(99, "acquired", "s\x1b[2J", run),
		eventJSON(99, "acquired", strings.Repeat("s", 513), run),
		eventJSON(99, "acquired", "s", uuid.Nil),
		strings.Repeat("x", 7999),
	}
	conn := r.stranger()
	for _, p := range payloads {
		if _, err := conn.Exec(context.Background(), `SELECT pg_notify('lease_events', $1)`, p); err != nil {
			t.Fatalf("pg_notify(%.40q): %v", p, err)
		}
	}
	// A real transition after them: the monitor is still listening.
	real := uuid.New()
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'real')`, r.keys[0].Account, r.keys[0].Session, real)
	waitMirror(t, m, 30*time.Second, "the real lease", func(s *monitor.State) bool {
		l, ok := s.Lease(r.keys[0])
		return ok && l.RunID == data.PublicRunID(real)
	})
	waitMirror(t, m, 30*time.Second, "every malformed payload counted", func(s *monitor.State) bool {
		return s.Malformed() == int64(len(payloads))
	})
	m.Read(func(s *monitor.State) {
		if !live(s) {
			t.Errorf("monitor %s after malformed payloads, want LIVE", s.Health(time.Now()).Link)
		}
	})
	r.exec(`SELECT lease.release($1, $2, $3)`, r.keys[0].Account, r.keys[0].Session, real)
	r.audit(m)
	report(t, "malformed-notifications", "payloads", len(payloads), "counted_malformed", len(payloads), "link", "LIVE")
}

// A well-formed event forged by a client with no lease role (NOTIFY needs
// no privilege) must neither show a lease the database does not have nor
// hide a real transition. The forgery takes the id the next real event
// will get.
func TestForgedNotification(t *testing.T) {
	t.Parallel()
	r := newRig(t, 2)
	m := r.startMirror(r.url, mirrorCfg())
	var next int64
	if err := r.store.Pool().QueryRow(context.Background(),
		`SELECT max(id) + 1 FROM (SELECT coalesce(max(id), 0) AS id FROM lease.event) e`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	conn := r.stranger()
	forged := eventJSON(next, string(data.KindAcquired), r.keys[1].Session, uuid.New())
	if _, err := conn.Exec(context.Background(), `SELECT pg_notify('lease_events', $1)`, forged); err != nil {
		t.Fatal(err)
	}
	real := uuid.New()
	r.exec(`SELECT lease.acquire($1, $2, $3, '1 min', 'real')`, r.keys[0].Account, r.keys[0].Session, real)
	if got := r.lastEventID(); got != next {
		t.Fatalf("the real acquire drew event id %d, want %d (the forged one)", got, next)
	}
	want := r.leases()
	var diff string
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.WaitFor(ctx, func(s *monitor.State) bool {
		diff = sameAsDB(s, want)
		return diff == ""
	}); err != nil {
		t.Fatalf("a forged notification (published by a role with no lease rights) took event id %d, and 10 s later the monitor "+
			"still differs from lease.session_lease: %s (monitor: %s): it shows the forged lease and ignored the real event with that id as a duplicate",
			next, diff, describe(m))
	}
}
