package faults_test

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// Fault 1: every listener backend on the database (the monitor's and the
// waiting holders') is terminated with pg_terminate_backend while holders
// churn. The listeners reconnect, the monitor resyncs from lease.event, and
// nothing is missed or applied twice. The holders log in as a role of
// their own, so that each round shows, by the terminated backends' roles,
// that it cut both the monitor's listener and the holders'.
func TestListenerTerminated(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	r := newRigOn(t, db.URL, 3)
	holders, role := pgtest.Login(t, db, "lease_app")
	m := r.startMirror(r.url, mirrorCfg())
	c := r.startCrew(crewConfig{holders: 4, lease: crewTTL(2 * time.Second), leaseDSN: func(int) string { return holders }})
	r.waitRuns(t, 5)

	rounds := scale(3, 10)
	var worst time.Duration
	terminated := map[string]int{} // backends per role
	for range rounds {
		// A holder's listener runs while it holds or waits, so one may be
		// between the two at any instant: terminate until both kinds went.
		round := map[string]int{}
		pgtest.Eventually(t, 30*time.Second, "the monitor's and a holder's listener backends to be terminated", func() bool {
			// MATERIALIZED: the filter on the name runs before the termination.
			rows, err := r.store.Pool().Query(t.Context(), `WITH listener AS MATERIALIZED (
				SELECT pid, usename::text FROM pg_stat_activity
				 WHERE datname = current_database() AND application_name = 'leasetop listener')
				SELECT usename FROM listener WHERE pg_terminate_backend(pid)`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var user string
				if err := rows.Scan(&user); err != nil {
					t.Fatal(err)
				}
				round[user]++
				terminated[user]++
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return round[role] > 0 && len(round) > 1
		})
		cut := time.Now()
		worst = max(worst, r.converge(m, cut))
		r.waitRuns(t, 3) // the holders go on
	}
	c.stop()
	tally := r.audit(m)
	monitor := 0
	for user, n := range terminated {
		if user != role {
			monitor += n
		}
	}
	report(t, "listener-terminated", append([]any{"rounds", rounds, "holder_listeners_terminated", terminated[role],
		"monitor_listeners_terminated", monitor, "converged_in_max", worst}, tallyKV(tally)...)...)
}
