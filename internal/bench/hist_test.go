package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	t.Parallel()
	for _, v := range []uint64{0, 1, 63, 64, 65, 127, 128, 1000, 123456, 1 << 40, 1<<63 + 12345} {
		i := bucketOf(v)
		low, width := bucketBounds(i)
		if v < low || v >= low+width {
			t.Errorf("bucketOf(%d) = %d with bounds [%d, %d), want v inside", v, i, low, low+width)
		}
		if i >= bucketCount {
			t.Errorf("bucketOf(%d) = %d, want < %d", v, i, bucketCount)
		}
	}
}

func TestQuantileAccuracy(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		gen  func() time.Duration
	}{
		{"uniform 0-10ms", func() time.Duration { return time.Duration(rng.Int64N(int64(10 * time.Millisecond))) }},
		{"exponential mean 2ms", func() time.Duration { return time.Duration(rng.ExpFloat64() * float64(2*time.Millisecond)) }},
		{"constant 1.5ms", func() time.Duration { return 1500 * time.Microsecond }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			var samples []time.Duration
			for range 20000 {
				d := tt.gen()
				h.Record(d)
				samples = append(samples, d)
			}
			slices.Sort(samples)
			for _, q := range []float64{0.5, 0.9, 0.99, 1} {
				got := h.Quantile(q)
				want := samples[int(math.Ceil(q*float64(len(samples))))-1]
				if diff := float64(got-want) / float64(want); diff > 0.02 || diff < -0.02 {
					t.Errorf("Quantile(%v) = %v, want %v within 2%%", q, got, want)
				}
			}
			if got, want := h.Count(), uint64(len(samples)); got != want {
				t.Errorf("Count() = %d, want %d", got, want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i) * time.Microsecond
		all.Record(d)
		if i%2 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(&b)
	for _, q := range []float64{0.5, 0.99} {
		if got, want := a.Quantile(q), all.Quantile(q); got != want {
			t.Errorf("merged Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got, want := a.Max(), all.Max(); got != want {
		t.Errorf("merged Max() = %v, want %v", got, want)
	}
	var empty Histogram
	if got := empty.Quantile(0.5); got != 0 {
		t.Errorf("empty Quantile(0.5) = %v, want 0", got)
	}
}
