package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// askOptions are leasetop run's flags for asking to hand over: the asker's
// (--on-busy ask) and the holder's.
type askOptions struct {
	timeout time.Duration  // --ask-timeout
	then    lease.Then     // --then
	signal  syscall.Signal // --on-ask-signal: sent to the command when asked
	decline bool           // --decline-asks
}

// askFlags are the flags as parsed.
type askFlags struct {
	timeout *time.Duration
	then    *string
	signal  *string
	decline *bool
}

func addAskFlags(fs *flagSet) askFlags {
	return askFlags{
		timeout: fs.Duration("ask-timeout", 30*time.Second, "with --on-busy ask: how long the holder has to hand over (at most 1h)"),
		then:    fs.String("then", "refuse", "with --on-busy ask: what to do when the holder does not hand over in time: refuse (exit 3), queue or preempt"),
		signal:  fs.String("on-ask-signal", "SIGTERM", "when another run asks for the lease: the signal sent to CMD; the lease is handed over when CMD has exited"),
		decline: fs.Bool("decline-asks", false, "decline every ask to hand over (the asker is told at once)"),
	}
}

func (f askFlags) options() (askOptions, error) {
	o := askOptions{timeout: *f.timeout, decline: *f.decline}
	if o.timeout <= 0 || o.timeout > data.MaxAskTTL {
		return o, usageErrorf("run: --ask-timeout must be more than 0 and at most %s, got %s", data.MaxAskTTL, o.timeout)
	}
	then, err := lease.ParseThen(*f.then)
	if err != nil {
		return o, usageErrorf("run: --then must be refuse, queue or preempt, got %q", *f.then)
	}
	o.then = then
	sig, ok := askSignals[strings.TrimPrefix(strings.ToUpper(*f.signal), "SIG")]
	if !ok {
		return o, usageErrorf("run: --on-ask-signal must be one of SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, got %q", *f.signal)
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
// ask to its holder to hand over, and --then when it does not in time.
func acquireByAsking(ctx context.Context, env Env, client *lease.Client, permit lease.Permit, held *lease.HeldError, opts runOptions) (*lease.Lease, error) {
	fmt.Fprintf(env.Stderr, "leasetop: asking to hand over within %s, then %s: %s\n", opts.ask.timeout, opts.ask.then, heldMessage(held))
	l, err := client.Ask(ctx, permit, opts.ask.timeout, opts.ask.then)
	var ae *lease.AskError
	switch {
	case err == nil:
		return l, nil
	case errors.As(err, &ae):
	case opts.ask.then == lease.ThenPreempt: // the fallback's own refusals
		return nil, preemptError(err)
	case opts.ask.then == lease.ThenQueue && errors.Is(err, lease.ErrQueueFull):
		return nil, &ExitError{Code: ExitBusy, Err: fmt.Errorf("%s; the holder did not hand over within %s and the queue is full", heldMessage(held), opts.ask.timeout)}
	default:
		return nil, connError(err)
	}
	return nil, &ExitError{Code: ExitBusy, Err: errors.New(askMessage(ae, opts, err))}
}

// askMessage is the one line for an ask that ended without the lease,
// database text made inert.
func askMessage(ae *lease.AskError, opts runOptions, err error) string {
	key := termtext.Clean(ae.Key.String(), 0)
	switch {
	case errors.Is(err, lease.ErrAskBusy):
		return fmt.Sprintf("lease %s: run %s (%q) has asked its holder to hand over already, until %s (%s left)", key,
			ae.Ask.RunID, termtext.Clean(ae.Ask.Holder, 0), ae.Ask.Until.UTC().Format(time.RFC3339), ae.Ask.Remaining.Round(100*time.Millisecond))
	case errors.Is(err, lease.ErrAskDeclined):
		return fmt.Sprintf("lease %s: the holder declined to hand over", key)
	}
	return fmt.Sprintf("lease %s: the holder did not hand over within %s", key, opts.ask.timeout)
}

// onAsk answers an ask while the command runs: declines it with
// --decline-asks, else sends the command --on-ask-signal and hands over
// when it has exited (handOver).
func (s *supervisor) onAsk(a lease.Ask) {
	who := fmt.Sprintf("run %s (%q)", a.RunID, termtext.Clean(a.Holder, 0))
	if s.ask.decline {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Decline(ctx); err != nil {
			warnf(s.env.Stderr, "declining the ask of %s: %s", who, termtext.Clean(err.Error(), 0))
			return
		}
		warnf(s.env.Stderr, "declined the ask of %s to hand over (--decline-asks)", who)
		return
	}
	if s.asked != nil {
		return // already stopping for an earlier ask
	}
	s.asked = &a
	warnf(s.env.Stderr, "%s asks for lease %s within %s; sending %s to %s, handing over when it exits",
		who, termtext.Clean(a.Key.String(), 0), a.Remaining.Round(100*time.Millisecond), sigName(s.ask.signal), s.name)
	s.c.signal(s.ask.signal)
}

// handOver hands the lease over after the command exited for an ask. It
// reports whether it did.
func (s *supervisor) handOver() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.l.HandOver(ctx); err != nil {
		warnf(s.env.Stderr, "not handed over: %s", termtext.Clean(err.Error(), 0))
		return false
	}
	warnf(s.env.Stderr, "handed lease %s over to run %s (%q)", termtext.Clean(s.l.Key().String(), 0),
		s.asked.RunID, termtext.Clean(s.asked.Holder, 0))
	return true
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
