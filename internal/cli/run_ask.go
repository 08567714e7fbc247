package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// What a holding leasetop run does when another run asks it to hand over
// (--on-ask).
const (
	onAskDecline  = "decline"   // decline at once (the default)
	onAskHandOver = "hand-over" // stop the command (--on-ask-signal) and hand over once it exited
)

// askOptions are leasetop run's flags for asking to hand over: the asker's
// (--on-busy ask) and the holder's (--on-ask).
type askOptions struct {
	timeout  time.Duration  // --ask-timeout
	then     lease.OnBusy   // --then
	handOver bool           // --on-ask hand-over
	signal   syscall.Signal // --on-ask-signal: sent to the command when it hands over
}

// askFlags are the flags as parsed.
type askFlags struct {
	timeout *time.Duration
	then    *string
	onAsk   *string
	signal  *string
}

func addAskFlags(fs *flagSet) askFlags {
	return askFlags{
		timeout: fs.Duration("ask-timeout", 30*time.Second, "with --on-busy ask: how long the holder has to hand over (at most 1h)"),
		then: fs.String("then", lease.BusyRefuse.String(), "with --on-busy ask: what to do when the holder does not hand over (it declined, may not be asked, "+
			"runs are queued ahead, another ask is pending, or no answer in time): refuse (exit 3), queue or preempt"),
		onAsk: fs.String("on-ask", onAskDecline, "when another run asks this one to hand over: decline (at once; the command is not disturbed) "+
			"or hand-over (send CMD --on-ask-signal and hand the lease over once it has exited; for a CMD that expects it)"),
		signal: fs.String("on-ask-signal", "SIGTERM", "with --on-ask hand-over: the signal sent to CMD when another run asks for the lease"),
	}
}

// options checks the flags against each other and the busy flags (set
// names the flags given on the command line).
func (f askFlags) options(set map[string]bool, busy busyOptions) (askOptions, error) {
	o := askOptions{timeout: *f.timeout}
	if busy.onBusy != lease.BusyAsk {
		for _, name := range []string{"ask-timeout", "then"} {
			if set[name] {
				return o, usageErrorf("run: --%s is for --on-busy ask", name)
			}
		}
	}
	if o.timeout <= 0 || o.timeout > data.MaxAskTTL {
		return o, usageErrorf("run: --ask-timeout must be more than 0 and at most %s, got %s", data.MaxAskTTL, o.timeout)
	}
	then, err := lease.ParseOnBusy(*f.then)
	if err != nil || !then.AskFallback() {
		return o, usageErrorf("run: --then must be refuse, queue or preempt, got %s", termtext.Quote(*f.then))
	}
	o.then = then
	if busy.reason != "" && busy.onBusy == lease.BusyAsk && then != lease.BusyPreempt {
		return o, usageErrorf("run: --reason is for --on-busy preempt and --on-busy ask --then preempt")
	}
	switch *f.onAsk {
	case onAskDecline:
	case onAskHandOver:
		o.handOver = true
	default:
		return o, usageErrorf("run: --on-ask must be decline or hand-over, got %s", termtext.Quote(*f.onAsk))
	}
	if o.handOver && busy.notPreemptible {
		return o, usageErrorf("run: --on-ask hand-over contradicts --not-preemptible: a run that may not be preempted cannot be asked to hand over")
	}
	if set["on-ask-signal"] && !o.handOver {
		return o, usageErrorf("run: --on-ask-signal is for --on-ask hand-over")
	}
	sig, ok := askSignals[strings.TrimPrefix(strings.ToUpper(*f.signal), "SIG")]
	if !ok {
		return o, usageErrorf("run: --on-ask-signal must be one of SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, got %s", termtext.Quote(*f.signal))
	}
	o.signal = sig
	return o, nil
}

// askSignals are the signals --on-ask-signal may name.
var askSignals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP,
	"QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// acquireByAsking is --on-busy ask: the lease at once when free, else an
// ask to its holder to hand over, and --then when it does not.
func acquireByAsking(ctx context.Context, env Env, client *lease.Client, permit lease.Permit, held *lease.HeldError, opts runOptions) (*lease.Lease, error) {
	fmt.Fprintf(env.Stderr, "leasetop: asking to hand over within %s, then %s: %s\n", opts.ask.timeout, opts.ask.then, heldMessage(held))
	l, err := client.AskWith(ctx, permit, lease.AskOptions{Timeout: opts.ask.timeout, Then: opts.ask.then, Reason: opts.busy.reason})
	var ae *lease.AskError
	switch {
	case err == nil:
		if opts.ask.then == lease.BusyPreempt { // the fallback may have preempted
			awaitPreempted(ctx, env, l, opts)
		}
		return l, nil
	case errors.As(err, &ae):
		return nil, &ExitError{Code: ExitBusy, Err: errors.New(askMessage(ae, opts))}
	case opts.ask.then == lease.BusyPreempt: // the fallback's own refusals
		return nil, preemptError(err)
	case opts.ask.then == lease.BusyQueue && errors.Is(err, lease.ErrQueueFull):
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; the holder did not hand over and the queue is full", heldMessage(held))}
	}
	return nil, connError(err)
}

// askMessage is the one line for an ask that ended without the lease
// (--then refuse), database text made inert (markID, termtext.Quote).
func askMessage(ae *lease.AskError, opts runOptions) string {
	key := markID(ae.Key.String())
	switch {
	case errors.Is(ae.Reason, lease.ErrAskBusy):
		return fmt.Sprintf("lease %s: run %s (%s) has asked its holder to hand over already, until %s (%s left)", key,
			ae.Ask.RunID, termtext.Quote(ae.Ask.Holder), ae.Ask.Until.UTC().Format(time.RFC3339), ae.Ask.Remaining.Round(100*time.Millisecond))
	case errors.Is(ae.Reason, lease.ErrAskDeclined):
		return fmt.Sprintf("lease %s: the holder declined to hand over", key)
	case errors.Is(ae.Reason, lease.ErrNotPreemptible):
		return fmt.Sprintf("lease %s: the holder declared that it must not be preempted, so it may not be asked to hand over either", key)
	case errors.Is(ae.Reason, lease.ErrAskQueued):
		return fmt.Sprintf("lease %s: %d queued ahead; an ask may not pass them (--then queue joins the queue)", key, ae.Ahead)
	}
	return fmt.Sprintf("lease %s: the holder did not hand over within %s", key, opts.ask.timeout)
}

// onAsk answers an ask while the command runs: with --on-ask hand-over it
// sends the command --on-ask-signal and hands over when it has exited
// (handOver); otherwise it declines at once.
func (s *supervisor) onAsk(a lease.IncomingAsk) {
	who := fmt.Sprintf("run %s (%s)", a.RunID, termtext.Quote(a.Holder))
	if !s.ask.handOver {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Decline(ctx); err != nil {
			warnf(s.env.Stderr, "declining the ask of %s: %s", who, lineOf(err))
			return
		}
		warnf(s.env.Stderr, "declined the ask of %s to hand over (run with --on-ask hand-over to hand over)", who)
		return
	}
	if s.asked != nil {
		return // already stopping for an earlier ask
	}
	s.asked = &a
	warnf(s.env.Stderr, "%s asks for lease %s within %s; sending %s to %s, handing over when it exits",
		who, termtext.Mark(a.Key.String(), 0), a.Remaining.Round(100*time.Millisecond), sigName(s.ask.signal), s.name)
	s.c.Signal(s.ask.signal)
}

// handOver hands the lease over after the command exited for an ask. When
// it cannot (the ask expired or was withdrawn before the command exited),
// the command was stopped for nothing: it says so, and run exits
// ExitNotHandedOver once the lease is released (ExitLost when the lease
// was lost meanwhile).
func (s *supervisor) handOver() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	who := fmt.Sprintf("run %s (%s)", s.asked.RunID, termtext.Quote(s.asked.Holder))
	if err := s.l.HandOver(ctx); err != nil {
		code := ExitNotHandedOver
		if errors.Is(err, lease.ErrLost) {
			code = ExitLost
		}
		return &ExitError{Code: code, Err: fmt.Errorf("stopped %s for the ask of %s, but did not hand over: %s; the lease is released",
			s.name, who, lineOf(err))}
	}
	warnf(s.env.Stderr, "handed lease %s over to %s", termtext.Mark(s.l.Key().String(), 0), who)
	return nil
}

// sigName is "SIGTERM" for syscall.SIGTERM.
func sigName(sig syscall.Signal) string {
	for name, s := range askSignals {
		if s == sig {
			return "SIG" + name
		}
	}
	return sig.String()
}
