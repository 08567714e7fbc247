package data

import "time"

// SetActivityEvery makes the progress watchers read the activity every d
// until restore: the tests catch a wait of lock_timeout's second.
func SetActivityEvery(d time.Duration) (restore func()) {
	old := activityEvery
	activityEvery = d
	return func() { activityEvery = old }
}
