package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasetop/leasetop/lease"
)

const inboxDesc = "send -> holder's callback: lease.Client.Send of a steer, open loop at the rate named over 8 conversations " +
	"(each message sent at its time from a goroutine of its own, whether or not the ones before have returned), " +
	"to a Client holding them all (one process's, each lease reading Lease.Messages and acknowledging each message from a goroutine of its own, joined by the lease into one call per batch); " +
	"time from Send's call to the message on the holder's channel; the note gives Send's own time (its commit) and the holder's waits for a pooled connection"

// The inbox workload's shape: the rates measured (the issue asks for
// 1,000 messages a second; 100 shows the latency of a holder that keeps
// up on a machine that cannot), spread over a few conversations (one inbox
// holds 64 live messages), each sent to by a sender of its own (a Client
// on its own store, as a device's backend).
var inboxRates = []int{100, 1000} // messages per second, all senders together

const inboxSessions = 8

// inboxInFlight bounds the sends of one conversation under way at once:
// past it a message due is not sent (counted in the row's note). An inbox
// holds 64 live messages, so a sender further behind than that measures
// nothing more of the holder.
const inboxInFlight = 64

// runInbox measures the inbox end to end through the library: senders send
// steers at a fixed rate, open loop (each message at its time, from a
// goroutine of its own, not waiting for the ones before to return or to be
// received), and the holder's Messages hand them on. Each message's body
// carries its sequence number; its latency runs from its Send call to the
// holder receiving it. The holder acknowledges each, as a program does, so
// the inboxes stay short.
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
	in := &inboxRun{pool: holderStore.Pool()}
	in.reset()
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
	st := in.result()
	res := newResult("", inboxDesc, st.hist, sentAll)
	res.Missed = st.lost
	res.Note = fmt.Sprintf("%d conversations, %d messages/s offered; ops/s is the rate received", inboxSessions, rate)
	if st.send.Count() > 0 {
		res.Note += fmt.Sprintf("; Send itself p50 %.1f ms, p99 %.1f ms", ms(st.send.Quantile(0.5)), ms(st.send.Quantile(0.99)))
	}
	if st.acquires > 0 {
		res.Note += fmt.Sprintf("; the holder's %d connections: %.0f %% of its calls waited for one, %.1f ms on average",
			st.conns, 100*float64(st.waited)/float64(st.acquires), ms(st.wait)/float64(st.acquires))
	}
	if st.lost > 0 {
		res.Note += fmt.Sprintf("; %d sent and never received", st.lost)
	}
	if st.refused > 0 {
		res.Note += fmt.Sprintf("; %d sends refused, the inbox full (the holder fell behind)", st.refused)
	}
	if st.skipped > 0 {
		res.Note += fmt.Sprintf("; %d not sent, %d sends of their conversation under way", st.skipped, inboxInFlight)
	}
	if late := sentAll - r.cfg.Duration; late > r.cfg.Duration/10 {
		res.Note += fmt.Sprintf("; the last sends returned %.1fs after the schedule ended", late.Seconds())
	}
	return res, nil
}

// sendInbox sends for d: one sender per key, each at rate/len(keys)
// messages a second with a Client of its own, open loop: each message is
// sent at its time from a goroutine of its own (at most inboxInFlight of a
// key's at once), so a slow Send delays no other, and the time a message
// waits for a connection or for the conversation's earlier sends counts in
// its latency. It returns once every send has.
func (r *run) sendInbox(ctx context.Context, keys []lease.Key, rate int, d time.Duration, in *inboxRun) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	every := time.Second * time.Duration(len(keys)) / time.Duration(rate)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
		slots := make(chan struct{}, inboxInFlight)
		wg.Go(func() {
			next := time.Now().Add(every * time.Duration(i) / time.Duration(len(keys))) // staggered
			end := time.Now().Add(d)
			for ; next.Before(end) && ctx.Err() == nil; next = next.Add(every) {
				time.Sleep(time.Until(next)) // the open loop's schedule
				select {
				case slots <- struct{}{}:
				default:
					in.skip()
					continue
				}
				at := next
				seq := in.next(at)
				wg.Go(func() {
					defer func() { <-slots }()
					_, err := c.Send(ctx, p, lease.Message{Kind: lease.SteerMessage, Body: "m" + strconv.FormatInt(seq, 10)})
					in.sent(at, err == nil)
					if errors.Is(err, lease.ErrInboxFull) { // the holder is behind: counted, not waited for
						in.refuse(seq)
						err = nil
					}
					if err != nil && ctx.Err() == nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						cancel()
					}
				})
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
	pool             *pgxpool.Pool // the holder's
	mu               sync.Mutex
	seq              int64
	due              map[int64]time.Time // sent, not yet received
	hist             *Histogram          // Send's call to the holder's channel
	send             *Histogram          // Send's call to its return
	st0              *pgxpool.Stat       // the holder's pool when the measurement started
	refused, skipped int64
}

// inboxStats is one measurement's numbers.
type inboxStats struct {
	hist, send             *Histogram
	lost, refused, skipped int64
	// The holder's pool: its size, the connections its calls acquired,
	// how many of them waited for one, and how long in all.
	conns            int32
	acquires, waited int64
	wait             time.Duration
}

// skip counts a message not sent: its conversation had inboxInFlight
// sends under way.
func (in *inboxRun) skip() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.skipped++
}

// refuse forgets message seq, which the inbox refused.
func (in *inboxRun) refuse(seq int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.due, seq)
	in.refused++
}

// sent records how long a Send called at at took, when it sent.
func (in *inboxRun) sent(at time.Time, ok bool) {
	if !ok {
		return
	}
	d := time.Since(at)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.send.Record(d)
}

// next numbers a message due at at. Its latency counts from at, when its
// Send is called.
func (in *inboxRun) next(at time.Time) int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.seq++
	in.due[in.seq] = at
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
		if at, ok := in.due[seq]; ok && err == nil {
			in.hist.Record(now.Sub(at))
			delete(in.due, seq)
		}
		in.mu.Unlock()
		wg.Go(func() { _ = m.Ack(ctx) })
	}
}

// pending is how many messages were sent and not yet received.
func (in *inboxRun) pending() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.due)
}

// reset forgets the warm-up.
func (in *inboxRun) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.due, in.hist, in.send, in.refused, in.skipped = map[int64]time.Time{}, &Histogram{}, &Histogram{}, 0, 0
	if in.pool != nil {
		in.st0 = in.pool.Stat()
	}
}

// result returns the measurement's numbers.
func (in *inboxRun) result() inboxStats {
	in.mu.Lock()
	defer in.mu.Unlock()
	st := inboxStats{hist: in.hist, send: in.send, lost: int64(len(in.due)), refused: in.refused, skipped: in.skipped}
	if in.pool != nil && in.st0 != nil {
		now := in.pool.Stat()
		st.conns = now.MaxConns()
		st.acquires = now.AcquireCount() - in.st0.AcquireCount()
		st.waited = now.EmptyAcquireCount() - in.st0.EmptyAcquireCount()
		st.wait = now.AcquireDuration() - in.st0.AcquireDuration()
	}
	return st
}
