package ui

import (
	"fmt"
	"syscall"
	"testing"
	"time"
)

// BenchmarkScaleAnswer is the time from a key to the frame that answers it,
// at 100,000 and 1,000,000 leases (the target: at most 100 ms): s (the next
// sort order, cycling through all four) and one key of a filter that only
// sessions match. Run it with
//
//	go test ./ui -run '^$' -bench ScaleAnswer -benchtime 8x
func BenchmarkScaleAnswer(b *testing.B) {
	for _, n := range []int{scaleLeases, 1_000_000} {
		leases := scaleLeaseSet(n)
		b.Run(fmt.Sprintf("sort/%d", n), func(b *testing.B) {
			m, _ := scaleModel(leases, 200, 50)
			cpu := cpuClock(b)
			for b.Loop() {
				press(m, "s")
				_ = m.View()
			}
			cpu(b)
		})
		b.Run(fmt.Sprintf("filter/%d", n), func(b *testing.B) {
			m, _ := scaleModel(leases, 200, 50)
			press(m, "/")
			cpu := cpuClock(b)
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					press(m, "4")
				} else {
					press(m, "backspace")
				}
				_ = m.View()
			}
			cpu(b)
		})
	}
}

// cpuClock starts counting this process's CPU time; the function it returns
// reports it per iteration as cpu-ms/op: on a loaded machine the wall time
// per op mostly measures the other processes.
func cpuClock(b *testing.B) func(*testing.B) {
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatalf("getrusage: %v", err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := used()
	return func(b *testing.B) {
		b.ReportMetric(float64(used()-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
