package data

// TimelineStride is how far lease.follow_timeline moves the event ids (and
// fences) when a promoted standby writes its first transition on a new WAL
// timeline: ids on timeline T start at (T - 1) * TimelineStride. Two event
// ids in different strides were drawn on different timelines; the ids
// between them were never drawn, and a consumer's window of recent ids
// below the newer one says nothing about the older timeline's last ones.
const TimelineStride int64 = timelineStride
