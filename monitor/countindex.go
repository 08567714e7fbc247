package monitor

import (
	"math"
	"slices"
	"sort"
	"time"
)

// CountIndex is the leases' expiries, sorted, as they were at one
// LeasesVersion: Counts at any time costs two binary searches. It does not
// change with the State until the second rebuild after it (a rebuild
// sorts in the buffers of the index before the last), so a view can keep
// the latest, the one that matches the rows it shows, and count at every
// tick without sorting every lease again (at 100,000 leases a rebuild sorts
// 200,000 instants, about 30 ms).
type CountIndex struct {
	expiries   []int64 // sorted ExpiresAt (unix ns) of every lease
	soonStarts []int64 // sorted instants each lease starts "expiring soon"
}

// countIndexes is a State's CountIndex and the buffers of the one before,
// which the next rebuild sorts in: at a million leases each rebuild, once a
// second at 1000 transitions/s, allocated 16 MB (the target: resident memory
// at most 300 MB).
type countIndexes struct {
	built bool
	ver   uint64     // the State's leasesVer cur was built at
	cur   CountIndex // the latest
	spare CountIndex // the one before: nobody counts with it any more
	// shared says cur is a copy's too (State.Clone): it never becomes the
	// spare, which a rebuild would overwrite under the copy.
	shared bool
}

// share returns the copy a State's Clone gets: the same latest index,
// never rebuilt in place by either.
func (c *countIndexes) share() countIndexes {
	c.shared = true
	return countIndexes{built: c.built, ver: c.ver, cur: c.cur, shared: true}
}

// CountIndex returns the index of the leases as they are now, rebuilt only
// if they changed since the last call.
func (s *State) CountIndex() CountIndex {
	c := &s.counts
	if c.built && c.ver == s.leasesVer {
		return c.cur
	}
	t := &s.leases
	exp, soon := c.spare.expiries[:0], c.spare.soonStarts[:0]
	if cap(exp) < t.live {
		exp, soon = make([]int64, 0, t.live+t.live/8), make([]int64, 0, t.live+t.live/8)
	}
	for i := range int32(t.slots()) {
		if !t.alive(i) {
			continue
		}
		e := t.expires[i]
		exp = append(exp, e)
		ttl := time.Duration(e - t.renewed[i])
		if ttl <= 0 {
			soon = append(soon, math.MinInt64) // no TTL to speak of: always "soon"
			continue
		}
		soon = append(soon, e-int64(float64(ttl)*s.cfg.ExpiringSoon))
	}
	slices.Sort(exp)
	slices.Sort(soon)
	c.spare = CountIndex{}
	if !c.shared {
		c.spare = c.cur
	}
	c.cur, c.ver, c.built, c.shared = CountIndex{expiries: exp, soonStarts: soon}, s.leasesVer, true, false
	return c.cur
}

// At returns the counts at server time serverNow.
func (c CountIndex) At(serverNow time.Time) Counts {
	now := serverNow.UnixNano()
	// A lease is expired once now >= ExpiresAt, and expiring soon (or
	// expired) once now > its soon start, which is before its expiry.
	expired := sort.Search(len(c.expiries), func(i int) bool { return c.expiries[i] > now })
	soonOrExpired := sort.Search(len(c.soonStarts), func(i int) bool { return c.soonStarts[i] >= now })
	return Counts{Held: len(c.expiries) - expired, ExpiringSoon: soonOrExpired - expired, Expired: expired}
}
