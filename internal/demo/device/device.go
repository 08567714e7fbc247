package device

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// Config is one device process: one device (desktop, browser, phone)
// of one account's user, with some of that account's conversations open.
type Config struct {
	Name     string
	Account  string
	Sessions []string
	TTL      time.Duration
	Seed     int64
	// Mix is the strategies its user chooses from (nil: DefaultMix).
	Mix Mix
	// NextMix, when it receives, switches the mix to NextMix(mix) (the
	// demo's key for it reaches the device as SIGUSR1).
	NextMix <-chan os.Signal
}

// Validate checks the configuration; Run does too.
func (c Config) Validate() error {
	if c.Name == "" {
		return inputErrorf("--name", "must not be empty")
	}
	if err := data.ValidateHolder(c.Name); err != nil {
		return err
	}
	if len(c.Sessions) == 0 {
		return inputErrorf("--sessions", "must name at least one conversation")
	}
	for _, s := range c.Sessions {
		if err := data.ValidateKey(data.Key{Account: c.Account, Session: s}); err != nil {
			return err
		}
	}
	if c.TTL < MinTTL || c.TTL > MaxTTL {
		return inputErrorf("--ttl", "must be %s to %s, got %s", MinTTL, MaxTTL, c.TTL)
	}
	return nil
}

// timing is how a device's user and its simulated executions behave, in
// proportion to the TTL so that a demo with a short TTL is just faster.
type timing struct {
	thinkMin, thinkMax time.Duration // between presses of send
	runMin, runMax     time.Duration // one execution
	chunk              time.Duration // one chunk of output
	freeze             time.Duration // a step this much longer than planned was a freeze
	patience           time.Duration // how long a user waits for a busy conversation
}

func timingFor(ttl time.Duration) timing {
	return timing{
		thinkMin: ttl / 4, thinkMax: ttl * 5 / 4,
		runMin: ttl / 2, runMax: ttl * 2,
		chunk:  ttl / 5,
		freeze: ttl / 2, patience: ttl * 2,
	}
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
}

// deviceProcess is the state of the program one device process runs (the
// hidden `leasetop device` subcommand): its conversations' users and runs.
// The supervisor's view of the same process is a proc; the monitor's, with
// the device's other processes, a monitor.Device.
type deviceProcess struct {
	cfg    Config
	store  *data.Store
	client *lease.Client
	out    *reporter
	holder string
	timing timing
	// streams numbers the streams its runs write to (their attachments).
	streams atomic.Int64
	// mix is the strategies its user chooses from now.
	mix atomic.Pointer[Mix]
}

// Run runs one device until ctx ends: for each of its conversations,
// a user who presses send at random moments and a simulated execution for
// every run the lease grants. It reports what happens as JSON lines (see
// Report) on out, and keeps its status and attempts in the demo's tables
// (leasetop_demo.device, leasetop_demo.attempt) for the monitor's devices
// pane. It returns after every run it started has ended (released, or
// lost) and its final status is written.
func Run(ctx context.Context, store *data.Store, cfg Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Mix == nil {
		cfg.Mix = DefaultMix()
	}
	client, err := lease.New(store, lease.Config{TTL: cfg.TTL})
	if err != nil {
		return fmt.Errorf("device %s: %w", cfg.Name, err)
	}
	defer client.Close()
	holder := HolderLabel(cfg.Name, os.Getpid())
	status := newStatusWriter(store, cfg, os.Getpid(), holder)
	status.start(context.WithoutCancel(ctx))
	defer status.stop(context.WithoutCancel(ctx))
	d := &deviceProcess{
		cfg:    cfg,
		store:  store,
		client: client,
		out:    newReporter(out, status.observe),
		holder: holder,
		timing: timingFor(cfg.TTL),
	}
	d.mix.Store(&cfg.Mix)
	d.out.report(Report{Kind: ReportReady, PID: os.Getpid(), Holder: d.holder})
	var wg sync.WaitGroup
	if cfg.NextMix != nil {
		go func() {
			for {
				select {
				case <-cfg.NextMix:
					next := NextMix(*d.mix.Load())
					d.mix.Store(&next)
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for i, s := range cfg.Sessions {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
		wg.Go(func() { d.converse(ctx, s, rng) })
	}
	wg.Wait()
	return nil
}

// authorizer is the device's authorization step: its user is signed in to
// one account and may compete only for that account's conversations.
func (d *deviceProcess) authorizer() lease.Authorizer {
	return lease.AuthorizerFunc(func(_ context.Context, r lease.Request) error {
		if r.Key.Account != d.cfg.Account {
			return fmt.Errorf("signed in to account %q, not %q", d.cfg.Account, r.Key.Account)
		}
		return nil
	})
}

// fail reports an error the device survives.
func (d *deviceProcess) fail(session string, err error) {
	d.out.report(Report{Kind: ReportError, Session: session, Err: err.Error()})
}

// sleep waits d or until ctx ends; it reports whether the time passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
