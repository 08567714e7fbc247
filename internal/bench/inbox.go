package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasetop/leasetop/lease"
)

const inboxDesc = "send -> holder's callback: lease.Client.Send of a steer, open loop at the rate named over 8 conversations, " +
	"to a Client holding them all (one process's, each lease reading Lease.Messages and acknowledging each message from a goroutine of its own, joined by the lease into one call per batch); " +
	"time from Send's call to the message on the holder's channel"

// The inbox workload's shape: the rates measured (the issue asks for
// 1,000 messages a second; 100 shows the latency of a holder that keeps
// up on a machine that cannot), spread over a few conversations (one inbox
// holds 64 live messages), each sent to by a sender of its own (a Client
// on its own store, as a device's backend).
var inboxRates = []int{100, 1000} // messages per second, all senders together

const inboxSessions = 8

// runInbox measures the inbox end to end through the library: senders send
// steers at a fixed rate (each on its own schedule, not waiting for the one
// before to be received), and the holder's Messages hand them on. Each
// message's body carries its sequence number; its latency runs from the
// Send call to the holder receiving it. The holder acknowledges each, as a
// program does, so the inboxes stay short.
func (r *run) runInbox(ctx context.Context, w workload) ([]Result, error) {
	keys := r.keys(w.name, inboxSessions)
	holderStore, err := r.openStore(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer holderStore.Close()
	holder, err := lease.New(holderStore, lease.Config{TTL: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	defer holder.Close()
	in := &inboxRun{sent: map[int64]time.Time{}, hist: &Histogram{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, key := range keys {
		l, err := idleLease(ctx, holder, key, "bench inbox holder")
		if err != nil {
			return nil, err
		}
		defer l.Release(context.WithoutCancel(ctx)) //nolint:errcheck // best effort; cleanup deletes bench rows
		ms := l.Messages()
		wg.Go(func() { in.receive(ctx, ms) })
	}
	var out []Result
	for _, rate := range inboxRates {
		res, err := r.measureInbox(ctx, keys, rate, in)
		if err != nil {
			return nil, err
		}
		res.Name = fmt.Sprintf("%s %d/s", w.name, rate)
		out = append(out, res)
	}
	return out, nil
}

// measureInbox sends at rate messages/s for the warm-up and then the
// measurement, and returns the measurement's line.
func (r *run) measureInbox(ctx context.Context, keys []lease.Key, rate int, in *inboxRun) (Result, error) {
	r.checkpoint(ctx)
	if r.cfg.Warmup > 0 {
		if err := r.sendInbox(ctx, keys, rate, r.cfg.Warmup, in); err != nil {
			return Result{}, err
		}
	}
	in.reset()
	start := time.Now()
	if err := r.sendInbox(ctx, keys, rate, r.cfg.Duration, in); err != nil {
		return Result{}, err
	}
	sentAll := time.Since(start)
	deadline := time.Now().Add(10 * time.Second) // the last ones in flight
	for in.pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // draining the last receipts, bounded by deadline
	}
	h, lost, refused := in.result()
	res := newResult("", inboxDesc, h, sentAll)
	res.Missed = lost
	res.Note = fmt.Sprintf("%d conversations, %d messages/s offered; ops/s is the rate received", inboxSessions, rate)
	if lost > 0 {
		res.Note += fmt.Sprintf("; %d sent and never received", lost)
	}
	if refused > 0 {
		res.Note += fmt.Sprintf("; %d sends refused, the inbox full (the holder fell behind)", refused)
	}
	if late := sentAll - r.cfg.Duration; late > r.cfg.Duration/10 {
		// Latencies count from the schedule: senders behind it add their lag.
		res.Note += fmt.Sprintf("; the sends ended %.1fs behind their schedule", late.Seconds())
	}
	return res, nil
}

// sendInbox sends for d: one sender per key, each at rate/len(keys)
// messages a second on its own schedule, with a Client of its own.
func (r *run) sendInbox(ctx context.Context, keys []lease.Key, rate int, d time.Duration, in *inboxRun) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	every := time.Second * time.Duration(len(keys)) / time.Duration(rate)
	for i, key := range keys {
		store, err := r.openStore(ctx, nil)
		if err != nil {
			return err
		}
		defer store.Close()
		c, err := lease.New(store, lease.Config{TTL: 10 * time.Second})
		if err != nil {
			return err
		}
		defer c.Close()
		p, err := c.Authorize(ctx, allowBench, key, "bench sender")
		if err != nil {
			return err
		}
		wg.Go(func() {
			next := time.Now().Add(every * time.Duration(i) / time.Duration(len(keys))) // staggered
			end := time.Now().Add(d)
			for next.Before(end) && ctx.Err() == nil {
				time.Sleep(time.Until(next)) // the open loop's schedule
				seq := in.next(next)
				_, err := c.Send(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: "m" + strconv.FormatInt(seq, 10)})
				if errors.Is(err, lease.ErrInboxFull) { // the holder is behind: counted, not waited for
					in.refuse(seq)
					err = nil
				}
				if err != nil && ctx.Err() == nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				next = next.Add(every)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("inbox: send: %w", errs[0])
	}
	return nil
}

// inboxRun is what the senders and the holder share: when each message
// was due to be sent, by sequence number, and the latencies.
type inboxRun struct {
	mu      sync.Mutex
	seq     int64
	sent    map[int64]time.Time // sent, not yet received
	hist    *Histogram
	refused int64 // sends refused: the inbox was full
}

// refuse forgets message seq, which the inbox refused.
func (in *inboxRun) refuse(seq int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.sent, seq)
	in.refused++
}

// next numbers a message due at at. Its latency counts from at, its
// scheduled send: a sender that falls behind its schedule counts as late.
func (in *inboxRun) next(at time.Time) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seq++
	in.sent[in.seq] = at
	return in.seq
}

// receive records each message of ms, as the holder's program would
// take it, and acknowledges it from a goroutine of its own: the latency
// measured is the delivery's, not the acknowledgement's (a program
// acknowledges once it handled the message, in its own time), but the
// holder does acknowledge each, so the inbox stays short. The lease joins
// the acknowledgements that wait for one in flight into its next call
// (Message.Ack): one commit for a batch. At most an inbox's worth (64) of
// them wait at once: a message not acknowledged stays live.
func (in *inboxRun) receive(ctx context.Context, ms <-chan lease.Message) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for m := range ms {
		now := time.Now()
		seq, err := strconv.ParseInt(strings.TrimPrefix(m.Body, "m"), 10, 64)
		in.mu.Lock()
		if at, ok := in.sent[seq]; ok && err == nil {
			in.hist.Record(now.Sub(at))
			delete(in.sent, seq)
		}
		in.mu.Unlock()
		wg.Go(func() { _ = m.Ack(ctx) })
	}
}

// pending is how many messages were sent and not yet received.
func (in *inboxRun) pending() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.sent)
}

// reset forgets the warm-up.
func (in *inboxRun) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sent, in.hist, in.refused = map[int64]time.Time{}, &Histogram{}, 0
}

// result returns the latencies, how many messages were never received
// and how many sends were refused.
func (in *inboxRun) result() (*Histogram, int64, int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.hist, int64(len(in.sent)), in.refused
}
