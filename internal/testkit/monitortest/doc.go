// Package monitortest runs the monitor's model without a terminal, for tests:
// Mirror applies a monitor.Feed's batches to a monitor.State under a lock, so
// a test can read "the monitor's view" of the database, wait for a condition
// on it, count the batches the feed delivered (OnBatch) and play a consumer
// that has fallen behind (Pause). It is internal: leasetop's own tests (the
// monitor package's and the fault suite's) use it; it is not part of the
// monitor package's public surface.
package monitortest
