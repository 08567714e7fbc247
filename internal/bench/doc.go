// Package bench measures what the lease protocol costs a database, against
// baselines measured in the same run: SELECT 1 (the round-trip floor), the same
// UPSERT as one plain statement on a trigger-less copy of the table, and
// pg_try_advisory_xact_lock. It also measures handoff latency (a holder
// releases -> a waiting acquirer owns the lease, woken by NOTIFY or polling)
// and event propagation (ownership change -> event decoded by a
// data.Listener). `leasetop bench` prints its Report.
//
// Absolute times on a shared machine are noise; ratios between workloads of
// one run are the point, so every Report carries both, with the project's
// targets (targets.go: what the lease may cost against its baselines)
// marked met or not.
//
// # Isolation
//
// Everything bench writes is its own: leases and events under an account id
// prefix unique to the run ("leasetop-bench-<hex>-..."), and a scratch schema
// ("lease_bench_<hex>") holding the trigger-less copy of the table and copies
// of lease.acquire and lease.renew made from the embedded SQL (sqlcopy.go).
// Run removes all of it when it ends, also after an error or cancellation.
// It never changes the database's own triggers or settings.
//
// # Method
//
// A closed-loop workload runs Config.Clients goroutines, each with its own
// connection (never a shared pool) and its own share of Config.Keys keys, back
// to back for the warm-up and then the measured window. Latencies go into a
// log-linear Histogram per client (1.6 % resolution), merged at the end.
// Throughput is the number of operations started in the window over the
// window. Before each workload bench asks for a CHECKPOINT, so none lands in
// the middle of a measurement.
package bench
