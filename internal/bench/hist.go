package bench

import (
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets, like HdrHistogram: 64
// buckets per power of two, so every recorded value is reported within 1/64
// (1.6 %) of itself, in a fixed 30 KB whatever the number of samples. It is
// not safe for concurrent use: give each client its own and Merge them.
type Histogram struct {
	counts   [bucketCount]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

const (
	subBits     = 6
	subCount    = 1 << subBits // buckets per power of two
	bucketCount = subCount + (64-subBits)*subCount
)

// bucketOf returns the bucket index of v nanoseconds.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // >= 0
	sub := (v >> shift) & (subCount - 1)
	return subCount + shift*subCount + int(sub)
}

// bucketBounds returns the lowest value of bucket i and its width.
func bucketBounds(i int) (low, width uint64) {
	if i < subCount {
		return uint64(i), 1
	}
	shift := (i - subCount) / subCount
	sub := uint64((i - subCount) % subCount)
	return (subCount + sub) << shift, 1 << shift
}

// Record adds one latency. Negative values count as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	h.counts[bucketOf(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
}

// Merge adds o's samples to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest sample.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the average sample, 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the q-quantile (0 < q <= 1): the middle of the bucket that
// holds the sample of rank ceil(q*n), clamped to the observed min and max. It
// returns 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := bucketBounds(i)
			v := time.Duration(low + width/2)
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// percentilesMs returns the sample at each percentile from 0 (the least) to
// 100 (the most), in ms: a distribution to plot. Nil when empty.
func (h *Histogram) percentilesMs() []float64 {
	if h.n == 0 {
		return nil
	}
	out := make([]float64, 101)
	out[0] = ms(h.min)
	for p := 1; p <= 100; p++ {
		out[p] = ms(h.Quantile(float64(p) / 100))
	}
	return out
}
