package monitor

import "time"

// rateWindow is how far back the events-per-second figure looks.
const rateWindow = 10 * time.Second

// rate counts events in one-second buckets over rateWindow.
type rate struct {
	buckets [10]int
	sec     int64 // the unix second of the newest bucket
}

func (r *rate) add(now time.Time) {
	r.advance(now)
	r.buckets[r.sec%int64(len(r.buckets))]++
}

func (r *rate) advance(now time.Time) {
	s := now.Unix()
	if r.sec == 0 || s-r.sec >= int64(len(r.buckets)) {
		r.buckets = [10]int{}
		r.sec = s
		return
	}
	for ; r.sec < s; r.sec++ {
		r.buckets[(r.sec+1)%int64(len(r.buckets))] = 0
	}
}

// perSecond returns the mean rate over the window ending at now.
func (r rate) perSecond(now time.Time) float64 {
	r.advance(now)
	n := 0
	for _, b := range r.buckets {
		n += b
	}
	return float64(n) / rateWindow.Seconds()
}
