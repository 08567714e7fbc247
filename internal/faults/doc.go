// Package faults is leasetop's fault matrix: tests that inject a failure
// while real holders (lease.Client keepers and `leasetop run` processes) and
// a headless monitor (monitortest.Mirror) run against a real PostgreSQL, heal
// it, and check that the system converged:
//
//   - never two unexpired owners of one session on the server clock, and no
//     accepted write outside its run's grant (audit.Check over lease.event and
//     the fenced writes);
//   - fences rose per session;
//   - the monitor's picture equals lease.session_lease, and it applied every
//     lease.event row after its start exactly once;
//   - how long convergence took, logged as a "FAULT name key=value" line
//     that docs/RELIABILITY.md quotes.
//
// The faults: the listener's backend terminated, PostgreSQL stopped and
// restarted, a network blackhole between a holder and the database and
// between the monitor and the database, a burst of 10,000 ownership
// transitions, a monitor that takes nothing for a long time, holder
// processes killed with SIGKILL or frozen with SIGSTOP, a database
// clock hours away from the holders' and the monitor's, the transaction
// pooler (PgBouncer) the holders and monitors go through restarted, the
// hot standby a read-only monitor watches promoted, a failover to a
// streaming standby (synchronous and asynchronous replication) while holders
// and the monitor work through a two-host DSN, failovers of a real Patroni
// cluster (postmaster killed, Patroni stopped, switchover, the primary cut
// off from etcd; synchronous_mode, _strict and asynchronous) with holders
// through the multi-host DSN and HAProxy, and every consumer of the
// feed (events --follow, the monitor's events pane, the exporter) across
// backend kills, a server restart and a pooler restart.
//
// Limits (issue 40) under faults: with the account limited to fewer live
// runs than the `leasetop run` processes contending for its sessions, a slot
// holder frozen with SIGSTOP past its TTL (its slot goes to the waiter at
// its expiry on the database clock), the holders' backends terminated, the
// pooler restarted, and a Patroni failover in synchronous mode
// (TestPatroniFailover/sync-kill-limit). After each, never more holders of
// the account than its limit at any instant (audit.PeakHolders on the
// surviving server) and no accepted write from a run that held its session
// without a slot (audit.Check, invariant 3).
//
// The package also holds the bad-input cases that need a terminal or the
// built binary (`leasetop watch` at 20x5 and its connection errors) and
// hostile notifications on lease_events.
//
// Everything runs in `go test ./internal/faults`; LEASETOP_LONG=1 makes the
// bursts and outages larger. The package has no code of its own.
package faults
