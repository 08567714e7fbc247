package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// The consumers of the monitor's feed (events --follow, the monitor's
// events pane, the exporter) must apply every lease.event row exactly once
// across a lost connection, however it was lost. Each test below starts the
// three of them, breaks their connections, and right away makes 30
// transitions of every kind, each from its own psql process (an
// independent client, as a script would), so that the transitions commit
// while the consumers reconnect; then it compares what each consumer
// applied with lease.event.

// consumerApp is the application_name the consumers' pools connect with,
// so a test can find their backends; their listeners connect as "leasetop
// listener".
const consumerApp = "feed_consumer"

// withApp returns dsn with application_name=consumerApp.
func withApp(dsn string) string { return dsn + "&application_name=" + consumerApp }

// round is one round of transitions: leases made before the fault, to be
// released, force-released, taken over and renewed by a zombie after it.
type round struct {
	r     *rig
	n     int
	held  []uuid.UUID // runs holding held-n-i for an hour
	short []uuid.UUID // runs whose short-n-i lease expires at once
}

// prepare makes round n's leases (8 transitions) with the rig's own store.
func (r *rig) prepare(n int) *round {
	r.t.Helper()
	rd := &round{r: r, n: n}
	for i := range 5 {
		rd.held = append(rd.held, uuid.New())
		r.exec(`SELECT lease.acquire($1, $2, $3, '1 hour', 'before')`, account, fmt.Sprintf("held-%d-%d", n, i), rd.held[i])
	}
	for i := range 3 {
		rd.short = append(rd.short, uuid.New())
		r.exec(`SELECT lease.acquire($1, $2, $3, '1 millisecond', 'before')`, account, fmt.Sprintf("short-%d-%d", n, i), rd.short[i])
	}
	return rd
}

// write makes the round's 30 transitions, each from its own psql process
// on dsn, one after another: 20 acquisitions of fresh sessions, 3
// takeovers, 3 releases, 2 forced releases and 2 rejected renewals of runs
// that were taken over. It returns when the last one has committed.
func (rd *round) write(dsn string) {
	t := rd.r.t
	t.Helper()
	var stmts []string
	for i := range 20 {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.acquire('%s', 'new-%d-%d', gen_random_uuid(), '1 hour', 'psql')`, account, rd.n, i))
	}
	for i := range 3 {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.acquire('%s', 'short-%d-%d', gen_random_uuid(), '1 hour', 'psql')`, account, rd.n, i))
	}
	for i := range 3 {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.release('%s', 'held-%d-%d', '%s')`, account, rd.n, i, rd.held[i]))
	}
	for i := 3; i < 5; i++ {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.force_release('%s', 'held-%d-%d', NULL, 'exactly once')`, account, rd.n, i))
	}
	for i := range 2 {
		stmts = append(stmts, fmt.Sprintf(`SELECT lease.renew('%s', 'short-%d-%d', '%s', '1 hour')`, account, rd.n, i, rd.short[i]))
	}
	bin := pgtest.PSQLPath(t)
	for _, s := range stmts {
		pgtest.PSQL(t, bin, dsn, s)
	}
}

// terminate terminates the backends of the rig's database whose
// application_name is one of apps, and returns how many.
func (r *rig) terminate(apps ...string) int {
	r.t.Helper()
	var n int
	if err := r.store.Pool().QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = current_database() AND application_name = ANY($1)`, apps).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// Backend kills: the consumers' listener backends are terminated, then
// every backend they have (their pools' too), each time followed at once
// by 30 transitions from psql processes.
func TestConsumersAcrossBackendKills(t *testing.T) {
	r := newRig(t, 1)
	c := consumerDSN{dsn: withApp(r.url)}
	cs := r.startConsumers(c)
	for n, kill := range [][]string{{"leasetop listener"}, {"leasetop listener", consumerApp}} {
		rd := r.prepare(n)
		cs.caughtUp(time.Now())
		killed := r.terminate(kill...)
		if killed < 3 {
			t.Fatalf("round %d: terminated %d backends, want at least the 3 consumers' listeners", n, killed)
		}
		t0 := time.Now()
		rd.write(r.url)
		wrote := time.Now()
		f, s, e := cs.caughtUp(wrote)
		report(t, "consumers-backend-kill", "round", n, "killed", fmt.Sprintf("%q", kill), "backends", killed,
			"transitions", 30, "written_in", wrote.Sub(t0), "follower_after_last", f, "events_pane_after_last", s, "exporter_after_last", e)
	}
	cs.check()
}

// Server restart: PostgreSQL is stopped (fast shutdown) and started
// again; the 30 transitions are made the moment it accepts connections,
// while the consumers are still reconnecting.
func TestConsumersAcrossServerRestart(t *testing.T) {
	srv := pgtest.RequireServer(t)
	r := newRig(t, 1)
	cs := r.startConsumers(consumerDSN{dsn: withApp(r.url)})
	rd := r.prepare(0)
	cs.caughtUp(time.Now())
	restartWhenDone(t, srv)
	down := time.Now()
	srv.Stop()
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	up := time.Now()
	rd.write(r.url)
	wrote := time.Now()
	f, s, e := cs.caughtUp(wrote)
	cs.check()
	report(t, "consumers-server-restart", "outage", up.Sub(down), "transitions", 30, "written_in", wrote.Sub(up),
		"follower_after_last", f, "events_pane_after_last", s, "exporter_after_last", e)
}

// Pooler restart: the consumers read through PgBouncer, one set listening
// on a direct listen DSN, the other polling through the pooler. PgBouncer
// is stopped (SIGINT); the 30 transitions are made directly on the server
// while it is down; then it is started again.
func TestConsumersAcrossPoolerRestart(t *testing.T) {
	r := newRig(t, 1)
	b := pgtest.Bouncer(t, pgserver.BouncerOptions{PoolSize: 8})
	via, err := b.Via(r.url)
	if err != nil {
		t.Fatal(err)
	}
	listening := r.startConsumers(consumerDSN{dsn: withApp(via), listen: withApp(r.url)})
	polling := r.startConsumers(consumerDSN{dsn: withApp(via), poll: true})
	rd := r.prepare(0)
	listening.caughtUp(time.Now())
	polling.caughtUp(time.Now())
	down := time.Now()
	b.Stop()
	rd.write(r.url)
	wrote := time.Now()
	if err := b.Restart(context.Background()); err != nil {
		t.Fatalf("restart PgBouncer: %v", err)
	}
	up := time.Now()
	lf, ls, le := listening.caughtUp(up)
	pf, ps, pe := polling.caughtUp(up)
	listening.check()
	polling.check()
	report(t, "consumers-pooler-restart", "outage", up.Sub(down), "transitions", 30, "written_in", wrote.Sub(down),
		"listening_follower_after_restart", lf, "listening_events_pane_after_restart", ls, "listening_exporter_after_restart", le,
		"polling_follower_after_restart", pf, "polling_events_pane_after_restart", ps, "polling_exporter_after_restart", pe)
}
