package monitor

import "github.com/leasetop/leasetop/internal/data"

// noteFailoverLocked reports whether the events just queued moved the
// highest id from prev into a later WAL timeline's stride
// (data.FailoverStride): the database failed over and the new primary has
// written. f.mu must be
// held. The feed then resyncs, reading from a window below prev, not below
// the new highest id:
//
//   - the transitions the old primary committed just before it went (and,
//     with a synchronous standby, the new primary has too) were never
//     notified on the listener's dead connection, and a window below an id
//     2^43 above them would never read them again;
//   - whatever the feed queued from the old server around the failover (a
//     read-back or a catch-up row that raced the reconnection's resync) and
//     the new primary lost is replaced by the new primary's snapshot.
func (f *Feed) noteFailoverLocked(prev int64) bool {
	if prev <= 0 || f.highest/data.FailoverStride <= prev/data.FailoverStride {
		return false
	}
	f.floor = min(f.floor, max(prev-f.cfg.Window, 0))
	return true
}
