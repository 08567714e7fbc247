package monitortest

import (
	"fmt"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Writer makes the transitions a steady writer's would, without a
// database, for benchmarks that simulate load on a monitor or an exporter:
// the sessions of one account ("acct-writer", w-0000 to w-0999) acquired and
// released in turn, each release ending the acquisition before it, with
// ever larger event ids and fences.
type Writer struct {
	id  int64     // the last event id given
	run uuid.UUID // the run of the last acquisition
}

// NewWriter returns a writer whose first event id is after.
func NewWriter(after int64) *Writer { return &Writer{id: after} }

// Batch returns the next n transitions, received at at, as a batch from a
// listening feed.
func (w *Writer) Batch(n int, at time.Time) monitor.Batch {
	items := make([]monitor.Item, 0, n)
	for range n {
		w.id++
		key := data.Key{Account: "acct-writer", Session: fmt.Sprintf("w-%04d", w.id/2%1000)}
		ev := data.Event{ID: w.id, Kind: data.KindAcquired, At: at, Key: key, Fence: w.id,
			ExpiresAt: at.Add(time.Minute), Holder: "writer"}
		if w.id%2 == 1 {
			ev.Kind, ev.Fence, ev.RunID = data.KindReleased, w.id-1, w.run
		} else {
			w.run = uuid.New()
			ev.RunID = w.run
		}
		items = append(items, monitor.Item{Event: &ev, At: at})
	}
	return monitor.Batch{Items: items, Conn: data.ListenerState{Status: data.ListenerLive}}
}

// ProcessCPU is this process's user and system CPU time: on a loaded
// machine a benchmark's wall time mostly measures the other processes.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
