package faults_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/monitor"
)

// Fault 2: PostgreSQL is stopped (fast shutdown: open transactions rolled
// back, every client disconnected) while holders and the monitor run, and
// stays down longer than the leases' TTL, so a holder that was working
// through it loses its lease by its local deadline; then it is started again. The
// holders take the expired leases over, the monitor reconnects and resyncs,
// and nothing is missed.
//
// It stops the server the package's tests share: the tests here never run
// in parallel, and the server is restarted when the test ends either way.
func TestServerRestart(t *testing.T) {
	srv := pgtest.RequireServer(t)
	r := newRig(t, 3)
	m := r.startMirror(r.url, mirrorCfg())
	const ttl = 2 * time.Second
	c := r.startCrew(crewConfig{holders: 4, lease: crewTTL(ttl), sticky: 1})
	r.waitRuns(t, 5)
	pgtest.Eventually(t, 30*time.Second, "the sticky holder to hold a lease", func() bool { return r.holds("holder-0") })
	restartWhenDone(t, srv)

	down := time.Now()
	srv.Stop()
	stopped := time.Since(down)
	waitMirror(t, m, 30*time.Second, "the monitor to show the outage", func(s *monitor.State) bool { return !live(s) })
	noticed := time.Since(down)
	// Down until no holder believes it holds a lease (each gave up by its
	// local deadline, or finished and failed to release), and for longer
	// than a TTL: the length of the fault, not a wait for readiness.
	pgtest.Eventually(t, 30*time.Second, "every holder to give its lease up", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.rec.Started) == len(r.rec.Ended)
	})
	time.Sleep(time.Until(down.Add(scale(ttl+time.Second, 3*ttl))))
	outage := time.Since(down)
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	up := time.Now()
	converged := r.converge(m, up)
	r.waitRuns(t, 1)
	recovered := time.Since(up)
	r.waitRuns(t, 4)
	c.stop()
	tally := r.audit(m)
	if tally.Takeovers == 0 {
		t.Error("no lease was taken over after the restart; want the expired leases taken over")
	}
	lost := 0
	r.mu.Lock()
	for _, how := range r.rec.Ended {
		if how == audit.EndLost {
			lost++
		}
	}
	r.mu.Unlock()
	if lost == 0 {
		t.Error("no holder lost its lease during the outage; want the one working through it stopped by its local deadline")
	}
	report(t, "server-restart", append([]any{"shutdown_took", stopped, "monitor_noticed_in", noticed, "outage", outage,
		"converged_in", converged, "first_run_after_restart_in", recovered, "leases_lost", lost}, tallyKV(tally)...)...)
}

// restartWhenDone starts srv (the server the package's tests share) again
// when t ends, if t left it stopped.
func restartWhenDone(t *testing.T, srv *pgserver.Server) {
	t.Helper()
	t.Cleanup(func() {
		if srv.PID() == 0 {
			if err := srv.Restart(context.Background()); err != nil {
				t.Errorf("restart the server: %v", err)
			}
		}
	})
}
