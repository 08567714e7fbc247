package faults_test

import (
	"testing"
	"time"
)

// Fault 1: every listener backend on the database (the monitor's and the
// waiting holders') is terminated with pg_terminate_backend while holders
// churn. The listeners reconnect, the monitor resyncs from lease.event, and
// nothing is missed or applied twice.
func TestListenerTerminated(t *testing.T) {
	r := newRig(t, 3)
	m := r.startMirror(r.url, mirrorCfg())
	c := r.startCrew(crewConfig{holders: 4, lease: crewTTL(2 * time.Second)})
	r.waitRuns(t, 5)

	rounds := scale(3, 10)
	var worst time.Duration
	terminated := 0
	for range rounds {
		var n int
		if err := r.store.Pool().QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
			FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'leasetop listener'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no listener backend to terminate")
		}
		terminated += n
		cut := time.Now()
		worst = max(worst, r.converge(m, cut))
		r.waitRuns(t, 3) // the holders go on
	}
	c.stop()
	tally := r.audit(m)
	report(t, "listener-terminated", append([]any{"rounds", rounds, "backends_terminated", terminated,
		"converged_in_max", worst}, tallyKV(tally)...)...)
}
