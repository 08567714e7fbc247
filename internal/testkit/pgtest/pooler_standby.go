package pgtest

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/pgserver"
)

// OpenStore opens a data.Store on dsn (any server of the harness: direct,
// through a Bouncer, on a Standby) with opt, closed when t ends.
func OpenStore(t testing.TB, dsn string, opt data.Options) *data.Store {
	t.Helper()
	s, err := data.OpenWith(context.Background(), dsn, opt)
	if err != nil {
		t.Fatalf("data.OpenWith: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Bouncer starts a real PgBouncer (transaction mode, the Debian package's
// binary) in front of the harness's server for t, stopped when t ends. A
// test's database is reached through it at db.Via(b).
func Bouncer(t testing.TB, opts pgserver.BouncerOptions) *pgserver.Bouncer {
	t.Helper()
	srv := RequireServer(t)
	b, err := srv.StartBouncer(context.Background(), opts)
	if err != nil {
		t.Fatalf("start PgBouncer: %v", err)
	}
	t.Cleanup(func() {
		if died := b.Died(); died != "" {
			t.Errorf("PgBouncer ended during the test, stopped by nobody: %s", died)
		}
		b.Close()
	})
	return b
}

// Via returns the URL of db through PgBouncer b, as the superuser.
func (db DB) Via(t testing.TB, b *pgserver.Bouncer) string {
	t.Helper()
	u, err := b.Via(db.URL)
	if err != nil {
		t.Fatalf("URL through PgBouncer: %v", err)
	}
	return u
}

// Standby starts a streaming hot standby of the harness's server for t
// (pg_basebackup -R -X stream), stopped and removed when t ends. It has
// every database of the primary, the test's too: db.On(t, standby).
func Standby(t testing.TB) *pgserver.Server {
	t.Helper()
	srv := RequireServer(t)
	st, err := srv.StartStandby(context.Background(), pgserver.StandbyOptions{Options: pgserver.Options{Env: h.env}})
	if err != nil {
		t.Fatalf("start a standby: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// On returns the URL of db on another server of the harness's cluster (a
// standby, or one promoted from it), as the superuser.
func (db DB) On(t testing.TB, srv *pgserver.Server) string {
	t.Helper()
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatalf("parse test URL: %v", err)
	}
	u.Host = net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port()))
	return u.String()
}

// WaitReplayed waits until standby has replayed everything the harness's
// server had written when it was called. That is every parallel test's WAL
// too (a CREATE DATABASE copies its template through the WAL), so on a
// loaded machine it may take long: the deadline is generous.
func WaitReplayed(t testing.TB, standby *pgserver.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := standby.WaitReplayed(ctx, RequireServer(t)); err != nil {
		t.Fatal(err)
	}
}
