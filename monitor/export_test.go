package monitor

// Shims for the tests of package monitor_test (the ones built on
// monitortest.Mirror, which imports monitor and so cannot be used from
// inside it): helpers the in-package tests share with them.
var (
	IDs         = ids
	MustAcquire = mustAcquire
)
