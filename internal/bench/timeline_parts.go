package bench

import "fmt"

// stepParts splits the timeline's steps (a key to its frame) where their
// time goes: the key waiting for the program's goroutine (behind the
// messages queued before it: the feed's batches, ticks), then the read
// asked, answered when its message reaches Update.
type stepParts struct {
	queued, answered *Histogram
}

func newStepParts() stepParts { return stepParts{queued: &Histogram{}, answered: &Histogram{}} }

func (p stepParts) record(res probeResult) {
	p.queued.Record(res.keyAt)
	if res.answerAt > 0 {
		p.answered.Record(res.answerAt)
	}
}

func (p stepParts) String() string {
	return fmt.Sprintf("key taken by the program at p50 %.1f ms (p99 %.1f), the read's answer in Update at p50 %.1f ms (p99 %.1f, %d steps read)",
		ms(p.queued.Quantile(0.5)), ms(p.queued.Quantile(0.99)), ms(p.answered.Quantile(0.5)), ms(p.answered.Quantile(0.99)), p.answered.Count())
}
