package ui

import (
	"testing"
	"time"
)

func TestCompactStepReadsAlike(t *testing.T) {
	t.Parallel()
	// Every two durations with the same step read the same, through each
	// precision's boundaries.
	for _, f := range []struct {
		name string
		step func(time.Duration) time.Duration
		text func(time.Duration) string
	}{
		{"compact", compactStep, compact},
		{"agoText", agoStep, agoText},
	} {
		seen := map[time.Duration]string{}
		for _, d := range durationsToCheck() {
			step, text := f.step(d), f.text(d)
			if prev, ok := seen[step]; ok && prev != text {
				t.Errorf("%s: step %v reads %q and %q", f.name, step, prev, text)
			}
			seen[step] = text
			if again := f.text(step); again != text {
				t.Errorf("%s(%v) = %q, but of its step %v = %q", f.name, d, text, step, again)
			}
		}
	}
}

// durationsToCheck walks around each precision boundary of compact in
// 7 ms strides, and some far values.
func durationsToCheck() []time.Duration {
	var out []time.Duration
	for _, edge := range []time.Duration{0, time.Second, 10 * time.Second, time.Minute, time.Hour, 24 * time.Hour} {
		for d := edge - 3*time.Second; d < edge+3*time.Second; d += 7 * time.Millisecond {
			out = append(out, d, -d)
		}
	}
	return append(out, 49*time.Hour+59*time.Minute, 1000*time.Hour, 3*time.Hour+59*time.Minute+59*time.Second)
}
