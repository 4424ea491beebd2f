package load

import (
	"math/bits"
	"time"
)

// Histogram records durations with a relative error under 1% (128 linear
// sub-buckets per power of two, as HdrHistogram does), in constant memory.
// It is not safe for concurrent use: each worker keeps its own and they are
// merged at the end.
type Histogram struct {
	counts [histBuckets]uint64
	total  uint64
	max    int64
}

const (
	subBits     = 7 // 128 sub-buckets per power of two
	subCount    = 1 << subBits
	histBuckets = (64 - subBits + 1) * subCount
)

func bucketOf(v int64) int {
	if v < subCount {
		return int(max(v, 0))
	}
	shift := bits.Len64(uint64(v)) - subBits - 1
	return (shift+1)*subCount + int(v>>shift) - subCount
}

// bucketValue is the highest value bucket i holds, so quantiles never
// understate.
func bucketValue(i int) int64 {
	if i < subCount {
		return int64(i)
	}
	shift := i/subCount - 1
	sub := int64(i%subCount + subCount)
	return (sub+1)<<shift - 1
}

// Record adds one observation.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	h.counts[bucketOf(v)]++
	h.total++
	h.max = max(h.max, v)
}

// Merge adds o's observations to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.max = max(h.max, o.max)
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.total }

// Max is the largest observation.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Quantile returns the value at or below which a fraction q of the
// observations lie (0 when there are none).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := uint64(q*float64(h.total) + 0.5)
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(bucketValue(i), h.max))
		}
	}
	return time.Duration(h.max)
}
