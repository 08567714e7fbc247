package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// renewer batches the renewals of a Client's leases: the leases whose
// renewals fall due within a short window share one data.Store.RenewMany
// call (one statement, one transaction, one round trip). Each batch is sent
// from a goroutine of its own, so a slow batch never holds back the next
// one, and each lease waits for its batch only until its own attempt's
// deadline: the per-lease heartbeat and its local deadline stay in charge.
//
// Leases also align: when a batch is being gathered, every lease whose next
// renewal is due within the coming half interval is asked to renew now, in
// it. Renewing early only moves a deadline forward, and the leases of one
// batch share its send time, so they fall due together from then on: groups
// less than half an interval apart merge at the first renewal of either, so
// a Client sends about two calls per renew interval at most, however many
// leases it holds and however spread out it acquired them (with one lease,
// or leases due alone, the call is lease.renew). With a quarter interval,
// leases acquired slowly (a loaded machine) stayed in four or five groups.
type renewer struct {
	store  *data.Store
	ttl    time.Duration
	window time.Duration // how long a batch gathers after its first renewal
	ahead  time.Duration // how early a lease due soon is pulled into a batch

	mu        sync.Mutex
	pending   []*renewReq
	gathering bool
	leases    map[*Lease]struct{}

	onBatch    func(n int, sent time.Time)            // a test hook: called before each batch's call
	onAnswered func(n int, sent time.Time, err error) // a test hook: called when that call has returned
	onSettle   func(key Key)                          // a test hook: called when a lease ending waits for its batch
	oneByOne   atomic.Bool                            // lease.renew_many is missing or refused: renew one by one
	noAskRead  atomic.Bool                            // the login may not read lease.handover_ask: renew without it
}

// renewReq is one lease's renewal waiting for its batch.
type renewReq struct {
	l     *Lease
	ctx   context.Context
	reply chan renewReply // buffered: a batch never blocks on a lease that gave up
}

// renewReply is a batch's answer for one lease: sent is the batch's send
// time. alone says the batch decided nothing for it (its row was locked, or
// batches are not available): renew it alone.
type renewReply struct {
	sent  time.Time
	exp   time.Time
	err   error
	alone bool
}

func newRenewer(store *data.Store, cfg Config) *renewer {
	return &renewer{
		store:  store,
		ttl:    cfg.TTL,
		window: min(max(cfg.RenewInterval/50, time.Millisecond), 20*time.Millisecond),
		ahead:  cfg.RenewInterval / 2,
		leases: make(map[*Lease]struct{}),
	}
}

// join and leave register a lease whose heartbeat runs, to be pulled into
// batches when it is due soon.
func (r *renewer) join(l *Lease) {
	r.mu.Lock()
	r.leases[l] = struct{}{}
	r.mu.Unlock()
}

func (r *renewer) leave(l *Lease) {
	r.mu.Lock()
	delete(r.leases, l)
	r.mu.Unlock()
}

// renew renews l in the next batch, waiting until ctx ends at most, and
// returns the send time of the statement that renewed it with the expiry.
func (r *renewer) renew(ctx context.Context, l *Lease) (sent, exp time.Time, err error) {
	if !r.oneByOne.Load() {
		req := &renewReq{l: l, ctx: ctx, reply: make(chan renewReply, 1)}
		r.mu.Lock()
		r.pending = append(r.pending, req)
		if !r.gathering {
			r.gathering = true
			go r.gather()
		}
		r.mu.Unlock()
		select {
		case rep := <-req.reply:
			if !rep.alone {
				return rep.sent, rep.exp, rep.err
			}
		case <-ctx.Done():
			if l.keepCtx.Err() != nil {
				r.settle(ctx, req)
			}
			return time.Time{}, time.Time{}, fmt.Errorf("renew %s: no reply from its batch: %w", l.token.Key, context.Cause(ctx))
		}
	}
	sent = time.Now()
	exp, err = r.renewOne(ctx, l)
	return sent, exp, err
}

// settle waits for the batch that carries req to answer, until req's own
// deadline at most: the lease is being released (or is lost), and its
// Release must not reach the server before a renewal still in flight, which
// would then find the row gone and be recorded as a renew_rejected zombie.
func (r *renewer) settle(ctx context.Context, req *renewReq) {
	d, ok := ctx.Deadline()
	if !ok {
		return
	}
	if r.onSettle != nil {
		r.onSettle(req.l.token.Key)
	}
	t := time.NewTimer(time.Until(d))
	defer t.Stop()
	select {
	case <-req.reply:
	case <-t.C:
	}
}

// gather pulls in the leases due soon, waits the window for the renewals
// falling due with them, and sends them as one batch.
func (r *renewer) gather() {
	r.mu.Lock()
	now := time.Now()
	for l := range r.leases {
		if due := time.Unix(0, l.due.Load()); due.Sub(now) < r.ahead {
			signal(l.early)
		}
	}
	r.mu.Unlock()
	t := time.NewTimer(r.window)
	<-t.C
	r.mu.Lock()
	batch := r.pending
	r.pending, r.gathering = nil, false
	r.mu.Unlock()
	for len(batch) > data.MaxRenewMany { // more than one call takes: the others at the same time
		go r.send(batch[:data.MaxRenewMany])
		batch = batch[data.MaxRenewMany:]
	}
	r.send(batch)
}

// send renews batch with one RenewMany call, bounded by the latest of its
// renewals' own deadlines, and answers each one.
func (r *renewer) send(batch []*renewReq) {
	live := batch[:0]
	var until time.Time
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.reply <- renewReply{err: err} // gave up already: not sent
			continue
		}
		live = append(live, req)
		if d, ok := req.ctx.Deadline(); ok && d.After(until) {
			until = d
		}
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	if len(live) == 1 {
		// One lease due alone: lease.renew, which costs the server less than
		// a renew_many of one (bench: keepalive-renew, keepalive-1).
		req := live[0]
		sent := time.Now()
		if r.onBatch != nil {
			r.onBatch(1, sent)
		}
		var exp time.Time
		err := lateCall(until, "renew "+req.l.token.Key.String())
		if err == nil {
			exp, err = r.renewOne(ctx, req.l)
		}
		if r.onAnswered != nil {
			r.onAnswered(1, sent, err)
		}
		req.reply <- renewReply{sent: sent, exp: exp, err: err}
		return
	}
	items := make([]data.RenewItem, len(live))
	for k, req := range live {
		items[k] = data.RenewItem{Key: req.l.token.Key, RunID: req.l.token.RunID}
	}
	sent := time.Now()
	if r.onBatch != nil {
		r.onBatch(len(items), sent)
	}
	var got []data.Renewal
	err := lateCall(until, fmt.Sprintf("renew %d leases", len(items)))
	if err == nil {
		got, err = r.store.RenewMany(ctx, r.ttl, items)
	}
	if r.onAnswered != nil {
		r.onAnswered(len(items), sent, err)
	}
	if err != nil && (errors.Is(err, data.ErrSchema) || errors.Is(err, data.ErrPermission)) {
		// A database migrated before lease.renew_many, or a login not granted
		// it: renew one by one, as before.
		r.oneByOne.Store(true)
		for _, req := range live {
			req.reply <- renewReply{alone: true}
		}
		return
	}
	for k, req := range live {
		switch {
		case err != nil:
			req.reply <- renewReply{sent: sent, err: err}
		case errors.Is(got[k].Err, data.ErrLocked):
			req.reply <- renewReply{alone: true}
		default:
			req.reply <- renewReply{sent: sent, exp: got[k].ExpiresAt, err: got[k].Err}
			if got[k].Err == nil && req.l.asks.watching.Load() {
				go req.l.checkAsk() // a batch carries no ask reads (handover.go)
			}
		}
	}
}

// lateCall says whether a call bounded by until is already too late to
// send, by the clock rather than by its context: a process continued after
// a freeze (SIGSTOP, a paused VM) between taking a batch's send time and
// its call runs again before the context's timer fires, and pgx would start
// writing the call before the timer cancels it. A call that late is not
// sent at all.
func lateCall(until time.Time, what string) error {
	if time.Now().Before(until) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, context.DeadlineExceeded)
}
