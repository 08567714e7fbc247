package data

// FailoverStride is how far lease.follow_failover moves the event ids (and
// fences) when a promoted standby writes its first transition on a new WAL
// timeline: ids on WAL timeline T start at (T - 1) * FailoverStride. Two
// event ids in different strides were drawn on different WAL timelines,
// that is, a failover lies between them; the ids between them were never
// drawn, and a consumer's window of recent ids below the newer one says
// nothing about the older WAL timeline's last ones.
const FailoverStride int64 = failoverStride
