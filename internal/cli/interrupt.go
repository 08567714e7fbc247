package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Interrupted is the outcome of a command that SIGINT, SIGTERM or SIGHUP
// stopped: after its cleanup it exits 128 + the signal's number (130, 143,
// 129), as a shell reports a program that the signal killed. It is the rule
// for every command; docs/cli.md's exit code table names the exceptions
// (exporter, run).
type Interrupted struct{ Signal syscall.Signal }

// Error is the one line leasetop prints: "interrupted by SIGTERM".
func (e *Interrupted) Error() string { return "interrupted by " + signalName(e.Signal) }

// Code is the exit code: 128 + the signal's number.
func (e *Interrupted) Code() int { return 128 + int(e.Signal) }

// interruptSignals are the signals that stop a command: ctrl+c outside a
// raw terminal, kill, and a closed terminal.
func interruptSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
}

// withInterrupts returns ctx ended by the first SIGINT, SIGTERM or SIGHUP,
// with an *Interrupted cause (interruption reads it), and the function that
// stops catching them. Later signals are caught and ignored until then, so
// a second ctrl+c cannot cut the command's cleanup short.
func withInterrupts(ctx context.Context) (context.Context, func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, interruptSignals()...)
	return stopOnSignal(ctx, sigs, func() { signal.Stop(sigs) })
}

// stopOnSignal reads sigs until the returned stop function is called, and
// ends the returned context with an *Interrupted cause on the first SIGINT,
// SIGTERM, SIGHUP or SIGQUIT it reads; other signals (SIGUSR1, SIGUSR2) are
// dropped. release, when not nil, runs first in stop, before the reading
// ends. After stop, the caller may read sigs again.
func stopOnSignal(ctx context.Context, sigs <-chan os.Signal, release func()) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				switch sig, _ := s.(syscall.Signal); sig {
				case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
					cancel(&Interrupted{Signal: sig})
				}
			}
		}
	})
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			if release != nil {
				release()
			}
			close(done)
			wg.Wait()
			cancel(nil)
		})
	}
}

// interruption returns the signal that ended ctx, or nil when none did.
func interruption(ctx context.Context) *Interrupted {
	var in *Interrupted
	if errors.As(context.Cause(ctx), &in) {
		return in
	}
	return nil
}

// interrupted is the rule for a command that returned err after ctx (from
// withInterrupts) ended or not: a signal's *Interrupted replaces whatever the
// interrupted work returned (a cancelled query, a connection cut short),
// unless err already says it was interrupted.
func interrupted(ctx context.Context, err error) error {
	in := interruption(ctx)
	if in == nil || errors.As(err, new(*Interrupted)) {
		return err
	}
	return in
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}
