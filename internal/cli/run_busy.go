package cli

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// busyFlags are leasetop run's flags about a busy session and what the run
// declares about itself.
type busyFlags struct {
	onBusy         *string
	wait           *bool
	reason         *string
	notPreemptible *bool
	attachment     *string
	pool           *string
	priority       *int
}

func addBusyFlags(fs *flagSet) *busyFlags {
	return &busyFlags{
		onBusy: fs.String("on-busy", lease.BusyRefuse.String(), "when another run holds the lease: refuse (exit 3), wait (until it is free, in no particular order), "+
			"queue (take a ticket and be granted the lease in turn), preempt (take it now and stop that run; needs the lease_preempt role, and the holder must be preemptible; "+
			"CMD starts once that run's command stopped, or after --grace), ask (its holder to hand over: --ask-timeout, --then) "+
			"or steer (send the holder's run --message, or a line of stdin, and exit once it acknowledged it; CMD does not run)"),
		wait:   fs.Bool("wait", false, "the same as --on-busy wait"),
		reason: fs.String("reason", "", "with --on-busy preempt (or ask --then preempt): the reason recorded in the preempted event and shown to the preempted run"),
		notPreemptible: fs.Bool("not-preemptible", false,
			"declare that this run must not be preempted (a payment in progress): --on-busy preempt and --on-busy ask of it are refused"),
		attachment: fs.String("attachment", "", "a short text to publish on the lease (at most 1 KiB, no secret: readable by every lease_reader), "+
			"e.g. the id of the stream CMD writes to, so another device can join it instead of starting a run"),
		pool:     fs.String("pool", "", "the pool within the account this run counts against (leasetop limit set ACCOUNT --pool P N bounds its live runs)"),
		priority: fs.Int("priority", 0, "this run's priority, recorded on its lease (-32768 to 32767)"),
	}
}

// busyOptions are the parsed busy flags.
type busyOptions struct {
	// onBusy is what leasetop run does when another run holds the lease:
	// refuse (exit 3 at once, the default), wait (--wait), queue
	// (run_queue.go), preempt (needs lease_preempt) or ask (run_ask.go).
	onBusy         lease.OnBusy
	reason         string
	notPreemptible bool
	attachment     string
	pool           string
	priority       int16
}

// options checks the flags and returns them.
func (f *busyFlags) options() (busyOptions, error) {
	o := busyOptions{reason: *f.reason, notPreemptible: *f.notPreemptible, attachment: *f.attachment, pool: *f.pool}
	onBusy, err := lease.ParseOnBusy(*f.onBusy)
	if *f.wait {
		if err != nil || (onBusy != lease.BusyRefuse && onBusy != lease.BusyWait) {
			return o, usageErrorf("run: --wait is --on-busy wait; it cannot be combined with --on-busy %s", termtext.Clean(*f.onBusy, 40))
		}
		onBusy = lease.BusyWait
	}
	if err != nil || onBusy == lease.BusyJoin {
		return o, usageErrorf("run: --on-busy must be refuse, wait, queue, preempt, ask or steer, got %q", termtext.Clean(*f.onBusy, 40))
	}
	o.onBusy = onBusy
	if o.reason != "" && o.onBusy != lease.BusyPreempt && o.onBusy != lease.BusyAsk {
		return o, usageErrorf("run: --reason is for --on-busy preempt and --on-busy ask --then preempt")
	}
	if err := data.ValidateReason(o.reason); err != nil {
		return o, usageErrorf("run: --reason: %v", err)
	}
	if err := data.ValidateAttachment(o.attachment); err != nil {
		return o, usageErrorf("run: --attachment: %v", err)
	}
	if err := data.ValidatePool(o.pool); err != nil {
		return o, usageErrorf("run: --pool: %v", err)
	}
	if *f.priority < math.MinInt16 || *f.priority > math.MaxInt16 {
		return o, usageErrorf("run: --priority must be from -32768 to 32767, got %d", *f.priority)
	}
	o.priority = int16(*f.priority)
	return o, nil
}

// acquireForRun authorizes and acquires the lease; when another run holds
// it, it does what --on-busy says.
func acquireForRun(ctx context.Context, env Env, store *data.Store, client *lease.Client, opts runOptions) (*lease.Lease, error) {
	permit, err := client.AuthorizeRequest(ctx, commandLineAuthorizer{}, lease.Request{Key: opts.key, Holder: opts.holder,
		NotPreemptible: opts.busy.notPreemptible, Attachment: opts.busy.attachment,
		Pool: opts.busy.pool, Priority: opts.busy.priority})
	if err != nil {
		return nil, usageErrorf("run: %v", err)
	}
	l, err := client.Try(ctx, permit)
	var held *lease.HeldError
	var full *lease.LimitError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &full):
		return acquireAtLimit(ctx, env, store, client, permit, full, opts)
	case !errors.As(err, &held):
		return nil, connError(err)
	}
	if err := refuseWaitOnStandby(ctx, store, opts.busy.onBusy); err != nil {
		return nil, err
	}
	switch opts.busy.onBusy {
	case lease.BusyWait:
		fmt.Fprintf(env.Stderr, "leasetop: waiting: %s\n", heldMessage(held))
		l, err = client.Wait(ctx, permit)
	case lease.BusyQueue:
		return queueForRun(ctx, env, client, permit, heldMessage(held), held.Queued)
	case lease.BusyAsk:
		return acquireByAsking(ctx, env, client, permit, held, opts)
	case lease.BusySteer:
		if err := steerHolder(ctx, env, client, permit, held, opts); err != nil {
			return nil, err
		}
		return nil, exitSilently(ExitOK) // steered: the holder's run does the work
	case lease.BusyPreempt:
		if !held.Preemptible {
			return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; it may not be preempted", heldMessage(held))}
		}
		fmt.Fprintf(env.Stderr, "leasetop: preempting: %s\n", heldMessage(held))
		l, err = client.Preempt(ctx, permit, opts.busy.reason)
		if err != nil {
			return nil, preemptError(err)
		}
		awaitPreempted(ctx, env, l, opts)
	default: // refuse; the other strategies add their cases above
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; use --on-busy wait (or --wait) to wait for it", heldMessage(held))}
	}
	if err != nil {
		return nil, connError(err)
	}
	return l, nil
}

// acquireAtLimit is acquireForRun's answer to an account (or pool) at its
// limit of live runs: refuse (exit 3) naming the runs holding its slots,
// wait (--wait) for one of them to end, queue in the account's order, or
// preempt the account's lowest-priority run below --priority. Ask and steer
// act on a session's holder, which a full account does not have: refused,
// saying so.
func acquireAtLimit(ctx context.Context, env Env, store *data.Store, client *lease.Client, permit lease.Permit,
	full *lease.LimitError, opts runOptions) (*lease.Lease, error) {
	msg := full.Describe(markID, termtext.Quote)
	switch opts.busy.onBusy {
	case lease.BusyWait:
		if err := refuseWaitOnStandby(ctx, store, opts.busy.onBusy); err != nil {
			return nil, err
		}
		fmt.Fprintf(env.Stderr, "leasetop: waiting for the account: %s\n", msg)
		l, err := client.Wait(ctx, permit)
		if err != nil {
			return nil, connError(err)
		}
		return l, nil
	case lease.BusyQueue:
		if err := refuseWaitOnStandby(ctx, store, opts.busy.onBusy); err != nil {
			return nil, err
		}
		return queueForRun(ctx, env, client, permit, "the account's queue: "+msg, full.Queued)
	case lease.BusyPreempt:
		fmt.Fprintf(env.Stderr, "leasetop: preempting for a slot: %s\n", msg)
		l, err := client.Preempt(ctx, permit, opts.busy.reason)
		if err != nil {
			return nil, preemptError(err)
		}
		awaitPreempted(ctx, env, l, opts)
		return l, nil
	case lease.BusyRefuse:
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; use --on-busy wait (or --wait) to wait for a slot", msg)}
	}
	return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; --on-busy %s acts on a session's holder: use --on-busy wait (or --wait) to wait for a slot",
		msg, opts.busy.onBusy)}
}

// preemptError is the one line for a refused preempt.
func preemptError(err error) error {
	var (
		held *lease.HeldError
		full *lease.LimitError
	)
	switch {
	case errors.As(err, &full):
		return &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; no preemptible run of the account has a lower --priority than this one",
			full.Describe(markID, termtext.Quote))}
	case errors.Is(err, lease.ErrNotPreemptible) && errors.As(err, &held):
		return &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; it may not be preempted", heldMessage(held))}
	case errors.As(err, &held):
		return &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s: it changed hands while preempting; nothing was preempted", heldMessage(held))}
	case errors.Is(err, data.ErrPermission):
		var perm *data.PermissionError
		errors.As(err, &perm)
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("permission denied: %s (%s)", perm.Message, data.PreemptRoleHint)}
	}
	return connError(err)
}

// awaitPreempted holds the command back until the run l was preempted from
// says its command stopped (lease.Lease.WaitPreempted), --grace at most: a
// preempt ends the old lease at once, not the old command. It returns
// at once when l preempted nobody. A signal or the loss of l ends the wait
// early; the caller sees either.
func awaitPreempted(ctx context.Context, env Env, l *lease.Lease, opts runOptions) {
	if opts.grace <= 0 {
		return
	}
	wctx, cancel := context.WithTimeoutCause(ctx, opts.grace, errGraceOver)
	defer cancel()
	err := l.WaitPreempted(wctx)
	switch {
	case err == nil, ctx.Err() != nil, l.Err() != nil:
	case errors.Is(err, errGraceOver):
		warnf(env.Stderr, "the preempted run did not say its command stopped within %s (--grace); starting %s",
			opts.grace, termtext.Quote(opts.argv[0]))
	default:
		warnf(env.Stderr, "cannot tell whether the preempted run's command stopped (%s); starting %s after --grace (%s)",
			lineOf(err), termtext.Quote(opts.argv[0]), opts.grace)
		<-wctx.Done()
	}
}

// errGraceOver ends awaitPreempted's wait at --grace.
var errGraceOver = errors.New("--grace is over")

// heldMessage is the refusal's one line (data.HeldError.Describe), with
// database text made inert and look-alikes told apart (termtext.Mark,
// termtext.Quote).
func heldMessage(h *lease.HeldError) string {
	return h.Describe(markID, termtext.Quote)
}

// markID is an id (a key) for a line a user reads (termtext.Mark).
func markID(s string) string { return termtext.Mark(s, 0) }

// lineOf is err's text for a line a user reads. The library's errors that
// carry database text (a loss, an ask's outcome, a refusal) word themselves
// with termtext.Quote; any other error is made inert as a whole
// (termtext.Clean).
func lineOf(err error) string {
	switch e := err.(type) {
	case *lease.LostError:
		return e.Describe(termtext.Quote)
	case *lease.AskError:
		return e.Describe(termtext.Quote)
	case *lease.HeldError:
		return heldMessage(e)
	case *lease.CancelledError:
		return e.Describe(termtext.Quote)
	}
	return termtext.Clean(oneLine(err.Error()), 0)
}

// refuseWaitOnStandby returns the usual read-only error when onBusy would
// wait (wait, queue, ask, steer) and the server is a hot standby: a refusal read
// there says who holds the lease, but the wait's writes would fail
// read-only, which the library retries as a failover in progress, for ever.
func refuseWaitOnStandby(ctx context.Context, store *data.Store, onBusy lease.OnBusy) error {
	if onBusy != lease.BusyWait && onBusy != lease.BusyQueue && onBusy != lease.BusyAsk && onBusy != lease.BusySteer {
		return nil
	}
	standby, err := store.Standby(ctx)
	switch {
	case err != nil:
		return connError(err)
	case standby:
		return connError(fmt.Errorf("run --on-busy %s: %w", onBusy, data.ErrReadOnly))
	}
	return nil
}
