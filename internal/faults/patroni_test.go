package faults_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgserver"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// Fault: a failover of a real Patroni cluster (internal/pgserver: etcd,
// two PostgreSQL nodes under Patroni, HAProxy checking GET /primary) while
// holders work: lease.Client crews of three TTLs (1 s, 4 s, 20 s), half of them through the
// multi-host DSN with target_session_attrs=read-write and half through
// HAProxy, a `leasetop run` through each, and the monitor's feed through
// the DSN. Patroni, not the test, detects the fault and promotes.

// TestPatroniFailover runs the cases: without LEASETOP_LONG the first
// three (about a minute each on two cores), with it all of them.
func TestPatroniFailover(t *testing.T) {
	cases := []struct {
		name string
		pc   patroniCase
	}{
		// In synchronous_mode the primary's postmaster is killed with
		// SIGKILL. Patroni promotes the synchronous standby: no
		// acknowledged grant is lost, fences and event ids keep rising,
		// never two unexpired owners; the old primary rejoins as a replica.
		{"sync-kill", patroniCase{mode: pgserver.Synchronous, fault: killPostmaster}},
		// Asynchronous, the stream from the primary blackholed first (the
		// standby falls behind, less than maximum_lag_on_failover), grants
		// made, then the postmaster killed. Patroni promotes the standby,
		// which lacks those grants: they are lost, as Patroni documents.
		// What leasetop still keeps: fences above every fence handed out
		// before (the lost ones too), no write accepted outside its grant
		// (the lost grants' holders are refused or stop), and the old
		// primary's lost history is discarded when it rejoins.
		{"async-kill-behind", patroniCase{mode: pgserver.Asynchronous, fault: killPostmaster, behind: true}},
		// An operator's switchover (POST /switchover, what `patronictl
		// switchover` sends) while everything runs.
		{"sync-switchover", patroniCase{mode: pgserver.Synchronous, fault: switchover}},
		// The primary's Patroni is stopped (SIGTERM: it stops PostgreSQL
		// and gives up the leader key), then started again.
		{"sync-stop", patroniCase{mode: pgserver.Synchronous, fault: stopNode}},
		// The primary's Patroni is cut off from etcd while its PostgreSQL
		// keeps serving: Patroni demotes it when it cannot renew the
		// leader key, the key expires, the standby is promoted.
		{"sync-etcd-partition", patroniCase{mode: pgserver.Synchronous, fault: partitionEtcd}},
		{"async-etcd-partition", patroniCase{mode: pgserver.Asynchronous, fault: partitionEtcd}},
		// synchronous_mode_strict with three nodes: the third becomes the
		// synchronous standby of the new primary, so writes resume.
		{"strict-kill-3-nodes", patroniCase{mode: pgserver.SynchronousStrict, fault: killPostmaster, nodes: 3}},
	}
	if !longRun() {
		cases = cases[:3]
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { patroniFailover(t, tc.pc) })
	}
}

// patientTTL outlasts a Patroni failover (its leader key's TTL is 10 s):
// holders with it can renew on the new primary, as `leasetop run` run-a
// does; the crews of longTTL and shortTTL lose theirs when it takes longer.
const patientTTL = 20 * time.Second

// patroniFault is how the primary goes.
type patroniFault int

const (
	killPostmaster patroniFault = iota // SIGKILL to the primary's postmaster
	switchover                         // POST /switchover to the standby
	stopNode                           // SIGTERM to the primary's Patroni
	partitionEtcd                      // the primary's Patroni cut off from etcd
)

func (f patroniFault) String() string {
	return [...]string{"kill-9-postmaster", "switchover", "stop-patroni", "etcd-partition"}[f]
}

// patroniCase is one failover run.
type patroniCase struct {
	mode  pgserver.Replication
	fault patroniFault
	nodes int // default 2
	// behind blackholes replication from the primary before the fault, so
	// that the standby lacks the last grants for certain.
	behind bool
}

// startPatroni starts the test's Patroni cluster with HAProxy, or fails
// saying how to install what is missing.
func startPatroni(t *testing.T, mode pgserver.Replication, nodes int) *pgserver.Cluster {
	t.Helper()
	c, err := pgserver.StartCluster(context.Background(), pgserver.ClusterOptions{Replication: mode, Nodes: nodes, HAProxy: true})
	if errors.Is(err, pgserver.ErrNoPatroni) {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("start the Patroni cluster: %v", err)
	}
	t.Cleanup(c.Close)
	mem := c.Memory()
	report(t, "patroni-start", "replication", mode, "nodes", len(c.Nodes()), "start_up", c.StartedIn(), "processes", mem.Processes,
		"rss_mib", mem.RSSKiB>>10, "pss_mib", mem.PSSKiB>>10)
	return c
}

func patroniFailover(t *testing.T, pc patroniCase) {
	ctx := context.Background()
	c := startPatroni(t, pc.mode, pc.nodes)
	dsn, err := pgserver.CreateMigrated(ctx, c.DSN("postgres"), "failover")
	if err != nil {
		t.Fatal(err)
	}
	viaHAProxy := pgserver.WithDatabase(c.HAProxyURL("postgres"), "failover")
	old, err := c.Primary(ctx, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	standby := c.Nodes()[0] // the one to switch over to, or to measure the lag of
	if standby == old {
		standby = c.Nodes()[1]
	}
	if pc.mode != pgserver.Asynchronous {
		if standby, err = c.WaitSync(ctx, old); err != nil {
			t.Fatal(err)
		}
	}

	r := newRigOn(t, dsn, 6)
	m := r.startMirror(dsn, mirrorCfg())
	split := func(i int) string { // half the holders through each way
		if i%2 == 0 {
			return dsn
		}
		return viaHAProxy
	}
	runA := r.leasetopRun(dsn, "run-a", "--ttl", patientTTL.String())
	r.writing("run-a")
	long := r.startCrew(crewConfig{holders: 3, lease: crewTTL(longTTL), sticky: 2, name: "long", leaseDSN: split})
	short := r.startCrew(crewConfig{holders: 2, lease: crewTTL(shortTTL), name: "short", leaseDSN: split})
	patient := r.startCrew(crewConfig{holders: 2, lease: crewTTL(patientTTL), sticky: 2, name: "patient", leaseDSN: split})
	runB := r.leasetopRun(viaHAProxy, "run-b", "--ttl", longTTL.String(), "--wait")
	r.waitRuns(t, 8)

	var lost lostGrant
	var lagBytes int64
	if pc.behind {
		old.BlackholeReplication()
		lost = r.grantUnreplicated(100)
		r.waitRuns(t, 2) // the holders' grants the standby never sees
		lagBytes = r.walLag(c.URL(old, "postgres"), c.URL(standby, "postgres"))
	}
	lastBefore := r.lastEventID()

	stop := time.Now()
	switch pc.fault {
	case killPostmaster:
		if _, err := old.KillPostmaster(); err != nil {
			t.Fatal(err)
		}
	case switchover:
		if err := c.Switchover(ctx, old, standby); err != nil {
			t.Fatal(err)
		}
	case stopNode:
		old.Stop()
	case partitionEtcd:
		old.PartitionFromEtcd()
	}
	next, err := c.Primary(ctx, 60*time.Second, old)
	if err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	if pc.behind {
		old.ResumeReplication() // the old primary rejoins through it, its held bytes go nowhere
	}
	r.store = pgtest.OpenStore(t, dsn, data.Options{}) // the old pool's connections went with the old primary
	r.waitRuns(t, 1)
	firstRun := time.Since(promoted)
	converged := r.converge(m, promoted)
	pgtest.Eventually(t, 30*time.Second, "HAProxy to route to the new primary only", func() bool {
		up, err := c.HAProxyUp()
		return err == nil && len(up) == 1 && up[0] == next.Name
	})
	haproxyIn := time.Since(promoted)
	r.waitRuns(t, 5)

	var again data.Grant
	if pc.behind {
		again = r.grantAgain(lost)
	}
	switch pc.fault {
	case stopNode:
		if err := old.Restart(); err != nil {
			t.Fatal(err)
		}
	case partitionEtcd:
		old.HealEtcd()
	}
	rejoined, err := old.WaitRejoined(ctx, 120*time.Second)
	if err != nil {
		t.Fatalf("the old primary did not rejoin as a replica: %v\n%s", err, c.Logs(10))
	}
	long.stop()
	short.stop()
	patient.stop()
	codeA, codeB := r.stopRun(runA), r.stopRun(runB)

	before := r.runsBefore(stop)
	rising := r.fencesRiseAcross(before, promoted, lost)
	idsRise := r.idsRiseAcross(lastBefore, promoted)
	renewed, gaveUp, overlaps := r.oldHolders(stop, promoted)
	lostRuns := r.forgetUnknownRuns()
	lostEvents, lostReleases := r.sameEvents(m)
	r.mirrorsDBBut(m, lostEvents)
	tally := r.checkHistory()
	r.rejoinedAgrees(c.URL(old, "failover"))

	kv := []any{"replication", pc.mode, "nodes", len(c.Nodes()), "fault", pc.fault, "no_primary_for", promoted.Sub(stop),
		"first_run_on_new_primary_in", firstRun, "monitor_converged_in", converged, "haproxy_switched_in", haproxyIn,
		"old_primary_rejoined_in", rejoined,
		"old_holders_renewed_on_new_primary", renewed, "old_holders_stopped_before_next_owner", gaveUp,
		"granted_again_while_old_holder_worked", overlaps, "grants_lost", lostRuns, "lost_events_the_monitor_showed", lostEvents,
		"of_them_releases", lostReleases, "fences_checked_rising", rising, "event_ids_checked_rising", idsRise,
		"run_a_exit", codeA, "run_b_exit", codeB}
	if pc.mode != pgserver.Asynchronous {
		// A release commits without waiting for its flush (a lost one only
		// lets its lease expire), so one made just before the fault may be
		// lost even here; nothing else may.
		if lostRuns != 0 || overlaps != 0 || lostEvents != lostReleases {
			t.Errorf("in %s %d acknowledged grants and %d events other than releases were lost, and %d sessions granted again while their old holder worked, want none",
				pc.mode, lostRuns, lostEvents-lostReleases, overlaps)
		}
	}
	if pc.behind {
		if lostRuns == 0 {
			t.Error("no holder's grant was lost, though replication was blackholed before the kill: the test did not test the loss")
		}
		if again.Fence <= lost.fence {
			t.Errorf("the lost grant's session %s was granted again on the new primary with fence %d, want above the lost grant's %d",
				lost.key, again.Fence, lost.fence)
		}
		kv = append(kv, "wal_lag_at_kill_bytes", lagBytes, "lost_fence", lost.fence, "fence_after_failover", again.Fence)
	}
	report(t, "patroni", append(kv, tallyKV(tally)...)...)
}
