package faults_test

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// maxWritesKept bounds the accepted writes remembered per run after
// watchWrites: at one every 10 ms, 40 s of them.
const maxWritesKept = 4000

// watchWrites makes the rig remember, from now on, when each run's fenced
// writes were accepted.
func (r *rig) watchWrites() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writesFrom, r.writesAt = time.Now(), map[uuid.UUID][]time.Time{}
}

// wrote records that a fenced write of run was accepted.
func (r *rig) wrote(run uuid.UUID) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.writesAt == nil || now.Before(r.writesFrom) || len(r.writesAt[run]) >= maxWritesKept {
		return
	}
	r.writesAt[run] = append(r.writesAt[run], now)
}

// settled is how long after the fault (stop) the holders of the runs held
// then had each either had a fenced write accepted by the new primary (one
// after newFrom, when the test found the new primary writable: the fence
// check read a lease the new primary holds, so the holder renewed there; a
// holder that did so a little earlier counts from its first write after
// newFrom) or stopped working. slowest is the last of them, median the
// middle one; unsettled counts the runs that did neither before their
// holders were stopped by the test.
func (r *rig) settled(stop, newFrom time.Time) (slowest, median time.Duration, runs, unsettled int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ds []time.Duration
	for run := range r.rec.Started {
		end, ended := r.stoppedAt[run]
		if !r.startedAt[run].Before(stop) || (ended && end.Before(stop)) {
			continue // not held when the primary stopped
		}
		var at time.Time
		for _, w := range r.writesAt[run] {
			if w.After(newFrom) {
				at = w
				break
			}
		}
		if ended && (at.IsZero() || end.Before(at)) {
			at = end
		}
		if at.IsZero() {
			unsettled++
			continue
		}
		ds = append(ds, at.Sub(stop))
	}
	if len(ds) == 0 {
		return 0, 0, 0, unsettled
	}
	slices.Sort(ds)
	return ds[len(ds)-1], ds[len(ds)/2], len(ds), unsettled
}
