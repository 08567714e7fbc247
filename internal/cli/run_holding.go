package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/leasetop/leasetop/internal/supervise"
	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/lease"
)

// runHolding runs the command while l is held, stops it when l is lost, and
// releases l when the command has exited.
func runHolding(ctx context.Context, env Env, l *lease.Lease, opts runOptions, sigs <-chan os.Signal) error {
	defer func() {
		if err := l.Release(ctx); err != nil {
			warnf(env.Stderr, "%s (it expires by itself within %s)", lineOf(err), opts.ttl)
		}
	}()
	if err := l.Err(); err != nil { // lost between the grant and now
		warnf(env.Stderr, "%s; not starting %s", lineOf(err), termtext.Clean(opts.argv[0], 0))
		return exitSilently(ExitLost)
	}
	c, err := supervise.Start(opts.argv, supervise.Env(os.Environ(), opts.passDBEnv, l.Token().Env()), env.Stdin, env.Stdout, env.Stderr)
	if err != nil {
		return &ExitError{Code: supervise.StartCode(err), Err: fmt.Errorf("run: %s", termtext.Clean(err.Error(), 0))}
	}
	s := &supervisor{env: env, l: l, c: c, name: termtext.Clean(opts.argv[0], 0), grace: opts.grace, sigs: sigs, last: lease.Held,
		ask: opts.ask, asks: l.Asked()}
	if opts.steer.stop {
		s.msgs = l.Messages() // a cancel ends l's context (s.stop); the steers are the command's (leasetop inbox)
	}
	return s.run()
}

// supervisor watches the command (supervise.Child) and the lease.
type supervisor struct {
	env   Env
	l     *lease.Lease
	c     *supervise.Child
	name  string
	grace time.Duration
	sigs  <-chan os.Signal
	last  lease.Status // the status last reported

	ask   askOptions               // how to answer asks to hand over (run_ask.go)
	asks  <-chan lease.IncomingAsk // the lease's asks; nil once closed
	asked *lease.IncomingAsk       // the ask the command was stopped for

	msgs <-chan lease.Message // with --on-cancel stop, the lease's steers, left to the command; nil once closed
}

// run waits for the command to exit (passing its code on), forwarding
// signals and reporting the lease's state, and stops it on loss.
func (s *supervisor) run() error {
	for {
		select {
		case ex := <-s.c.Done(): // the guardian killed what it left: nothing runs unowned
			if !ex.Reported() {
				warnf(s.env.Stderr, "the guardian of %s ended without reporting how it exited", s.name)
			}
			if s.asked != nil {
				return s.handOver()
			}
			if code := ex.Code(); code != ExitOK {
				return exitSilently(code)
			}
			return nil
		case sig := <-s.sigs:
			s.forward(sig)
		case a, ok := <-s.asks:
			if !ok {
				s.asks = nil
				continue
			}
			s.onAsk(a)
		case _, ok := <-s.msgs: // marked delivered to this run; the command reads and acknowledges it (leasetop inbox)
			if !ok {
				s.msgs = nil
			}
		case <-s.l.Changed():
			s.report()
		case <-s.l.Done():
			return s.stop()
		}
	}
}

// stop ends the command after the lease was lost, or a cancel message
// came (--on-cancel stop): SIGTERM to its group, SIGKILL after the grace
// period. It exits ExitLost, or ExitCancelled (the lease is then released
// by runHolding).
func (s *supervisor) stop() error {
	code := ExitLost
	if cancelled(s.l) {
		code = ExitCancelled
	}
	warnf(s.env.Stderr, "%s; stopping %s (SIGTERM, SIGKILL after %s)",
		lineOf(s.l.Err()), s.name, s.grace)
	s.c.Signal(syscall.SIGTERM)
	kill := time.NewTimer(s.grace)
	defer kill.Stop()
	for {
		select {
		case <-s.c.Done(): // with what it left
			return exitSilently(code)
		case <-kill.C:
			warnf(s.env.Stderr, "%s did not exit within %s; sending SIGKILL", s.name, s.grace)
			s.c.Signal(syscall.SIGKILL)
		case sig := <-s.sigs:
			s.forward(sig)
		}
	}
}

func (s *supervisor) forward(sig os.Signal) {
	if ss, ok := sig.(syscall.Signal); ok {
		s.c.Signal(ss)
	}
}

// report prints the lease becoming at risk (renewals failing) and
// recovering, once per change.
func (s *supervisor) report() {
	st := s.l.State()
	prev := s.last
	s.last = st.Status
	switch {
	case st.Status == lease.AtRisk && prev != lease.AtRisk:
		var err error = errors.New("unknown error")
		if st.Err != nil {
			err = st.Err
		}
		warnf(s.env.Stderr, "lease %s at risk: renewal failed (%s); %s is stopped in %s unless a renewal succeeds",
			markID(s.l.Key().String()), lineOf(err), s.name,
			time.Until(st.Deadline).Round(100*time.Millisecond))
	case st.Status == lease.Held && prev == lease.AtRisk:
		warnf(s.env.Stderr, "lease %s renewed again", markID(s.l.Key().String()))
	}
}

// cmdRunGuardian is the hidden command run-guardian (supervise.Guardian):
// leasetop run starts it between itself and its command; run by hand it
// refuses in one line.
func cmdRunGuardian(_ context.Context, env Env, args []string) error {
	code, err := supervise.Guardian(env.Getenv, args)
	switch {
	case err != nil:
		return usageErrorf("%v", err)
	case code != ExitOK:
		return exitSilently(code)
	}
	return nil
}
