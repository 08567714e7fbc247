package monitor

import (
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// DefaultSweepPages is FeedConfig.SweepPages's default: 1024 pages (8 MB
// at PostgreSQL's default block size, about 70,000 leases) a read. A table
// of a million leases (about 14,000 pages) is then read in 14 slices, one a
// second: the server scans 1/14 of it a second instead of all of it, and
// the view of a renewal is up to 14 s old (Health.RenewalsAge).
const DefaultSweepPages = 1024

// sweep is where a Feed's delta reads are in their walk over the lease
// table's pages: each read reads the next slice of SweepPages pages, the
// last one open to the end, and each slice's read starts at the server time
// of that slice's previous read (less the overlap), so every renewal is
// read once its row's slice comes round, wherever the renewal put the row.
// Run's goroutine only.
type sweep struct {
	size  int64               // pages a slice; 0: the whole table each read
	pages int64               // the table's size when the pass began
	next  int64               // the first page of the next read's slice
	base  time.Time           // where a slice not read since the last resync starts
	since map[int64]time.Time // a slice's next start, by its first page

	passStart time.Time     // local time the pass began
	lastPass  time.Duration // how long the last whole pass took, to the next one's start (0: none yet)
}

// reset starts over after a resync that read every lease up to since.
func (w *sweep) reset(since time.Time) {
	w.base, w.next, w.pages = since, 0, 0
	clear(w.since)
}

// startsPass reports whether the next read begins a pass (and the table's
// size is to be read first).
func (w *sweep) startsPass() bool { return w.size > 0 && w.next == 0 }

// slice is the next read's pages and where its read starts.
func (w *sweep) slice() (data.Pages, time.Time) {
	if w.size <= 0 || w.pages <= w.size {
		return data.Pages{From: 0, To: -1}, w.start(0)
	}
	p := data.Pages{From: w.next, To: w.next + w.size}
	if p.To >= w.pages {
		p.To = -1 // the last slice runs to the end, however the table grew
	}
	return p, w.start(p.From)
}

func (w *sweep) start(from int64) time.Time {
	if t, ok := w.since[from]; ok {
		return t
	}
	return w.base
}

// read records the read of p, whose rows are read up to since, done at
// local time at, and moves on to the next slice.
func (w *sweep) read(p data.Pages, since, at time.Time) {
	if w.since == nil {
		w.since = map[int64]time.Time{}
	}
	w.since[p.From] = since
	if p.From == 0 {
		switch {
		case p.To < 0:
			w.lastPass = 0 // the whole table in one read: as fresh as the reads
		case !w.passStart.IsZero():
			w.lastPass = at.Sub(w.passStart) // from one read of a slice to its next
		}
		w.passStart = at
	}
	w.next = max(p.To, 0)
}

// age is how old the view of a renewal may be once the table is read in
// slices: the time from one read of a slice to its next (a renewal just
// after a read waits that long); 0 while every read reads the whole table.
func (w *sweep) age() time.Duration { return w.lastPass }
