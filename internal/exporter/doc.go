// Package exporter is `leasetop exporter`: the monitor's feed and state,
// headless, served to Prometheus.
//
// # Data flow
//
//	PostgreSQL ──▶ monitor.Feed ──Batch──▶ Exporter.apply ──▶ monitor.State
//	                                            │ events applied for the first time
//	                                            ▼
//	                          counters and histograms (client_golang)
//	scrape ──▶ /metrics ──▶ gauges computed from the State at scrape time
//
// The exporter is a consumer of monitor.Feed like the monitor's screen, so it
// inherits the feed's reconnects, resyncs and de-duplication: an event is
// counted when monitor.State applies it for the first time (State.Apply
// returns exactly those), once, however many times notifications and resyncs
// deliver it. The first resync reads the recent past; its events are history
// and are not counted, so a restarted exporter starts its counters at zero
// like any Prometheus counter instead of replaying old transitions into
// rate() and increase().
//
// The gauges (leases held, expiring, expired and unclaimed, the oldest
// lease's age, the feed's state, the time since the last read, the server
// clock's offset) are computed by a custom Collector when Prometheus scrapes,
// on the server clock (data.Clock): one pass over a dense copy of each
// lease's expiry, acquisition and account (20 bytes a lease, under a
// millisecond at 100,000 leases), which is brought up to date as items are
// applied, one map update per changed lease. Nothing is computed per lease
// between scrapes.
//
// # Labels
//
// No metric carries a session, run or holder label: 100,000 sessions would
// be 100,000 series. With Config.ByAccount the lease gauges get an account
// label for the Config.MaxAccounts accounts with the most leases and
// account="other" for the rest. The counters never get one: the top accounts
// change, and a counter whose series moves between "acme" and "other" would
// go down. The limit gauges (leasetop_limit_*) are labelled account and pool
// for the Config.MaxLimits fullest limits, the rest summed as
// account="other".
//
// # Why internal
//
// An exporter describes the database, not the process it runs in: every
// replica of an application that embedded it would export the same leases,
// and sum() over them would be wrong. One `leasetop exporter` per database is
// the deployment; what a holder process should export about itself belongs to
// the lease library's metrics hook.
package exporter
