package ui

import (
	"fmt"
	"testing"
)

// BenchmarkScaleAnswer is the time from a key to the frame that answers it,
// at 100,000 and 1,000,000 leases (issue 30: at most 100 ms): s (the next
// sort order, cycling through all four) and one key of a filter that only
// sessions match. Run it with
//
//	go test ./ui -run '^$' -bench ScaleAnswer -benchtime 8x
func BenchmarkScaleAnswer(b *testing.B) {
	for _, n := range []int{scaleLeases, 1_000_000} {
		leases := scaleLeaseSet(n)
		b.Run(fmt.Sprintf("sort/%d", n), func(b *testing.B) {
			m, _ := scaleModel(leases, 200, 50)
			for b.Loop() {
				press(m, "s")
				_ = m.View()
			}
		})
		b.Run(fmt.Sprintf("filter/%d", n), func(b *testing.B) {
			m, _ := scaleModel(leases, 200, 50)
			press(m, "/")
			for i := 0; b.Loop(); i++ {
				if i%2 == 0 {
					press(m, "4")
				} else {
					press(m, "backspace")
				}
				_ = m.View()
			}
		})
	}
}
