package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// Outcome is what a finished demo found.
type Outcome struct {
	audit.Result
	// Elapsed is how long the demo ran.
	Elapsed time.Duration
	// Seed reproduces the chaos schedule.
	Seed int64
	// Interrupted reports that the context ended the demo before its
	// duration.
	Interrupted bool
	// Devices are every device process the demo ran, as each last reported
	// itself (DevicesErr: why they could not be read).
	Devices    []monitor.Device
	DevicesErr error
}

// Demo runs the device processes, the chaos schedule and the event stream
// on one database, then checks the invariants.
type Demo struct {
	cfg   Config
	store *data.Store
	obs   Observer
	cmds  chan command

	mu     sync.Mutex
	status Line
}

// New returns a demo on store (migrated, with the demo's tables; see
// Setup). observe receives the event stream; it may be nil.
func New(store *data.Store, cfg Config, observe Observer) (*Demo, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if observe == nil {
		observe = func(Line) {}
	}
	return &Demo{cfg: cfg, store: store, obs: observe, cmds: make(chan command)}, nil
}

// Config returns the configuration with its defaults filled in.
func (d *Demo) Config() Config { return d.cfg }

// Status returns the last thing the chaos schedule or a demo key did, for a
// status bar.
func (d *Demo) Status() Line {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}

// Run starts one process per device and account, runs the chaos schedule
// until the duration passes or ctx ends, stops the devices (each releases
// what it holds), and checks the invariants on the database. It returns an
// error only when the demo could not run or check; broken invariants are in
// the Outcome.
func (d *Demo) Run(ctx context.Context) (Outcome, error) {
	bg := context.WithoutCancel(ctx)
	startID, err := d.store.LastEventID(ctx)
	if err != nil {
		return Outcome{}, fmt.Errorf("read the last event id: %w", err)
	}
	r := d.newRunner(startID)
	stopFeed := r.feed.Start(bg)
	defer stopFeed()

	r.readLimits(ctx)
	var startErr error
	for _, p := range r.procs {
		if startErr = r.spawn.start(p); startErr != nil {
			break
		}
		r.recordStart(ctx, p)
		r.emit("online", fmt.Sprintf("%s: %s, open on %s", p, p.account, strings.Join(p.sessions, ", ")))
	}
	if startErr == nil {
		r.loop(ctx)
	}
	r.shutdown(bg)
	r.wg.Wait()
	stopFeed()
	if startErr != nil {
		return Outcome{}, startErr
	}
	cctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	r.catchUp(cctx)
	res, err := audit.Check(cctx, d.store, r.rec)
	if err != nil {
		return Outcome{}, err
	}
	devices, devErr := ReadDevices(cctx, d.store, d.cfg.AccountIDs(), true)
	return Outcome{Result: res, Elapsed: r.elapsed(), Seed: d.cfg.Seed, Interrupted: r.interrupted,
		Devices: devices, DevicesErr: devErr}, nil
}

// command is a demo key pressed in the monitor.
type command struct {
	kind  ActionKind
	key   data.Key
	reply chan Line
}

// Act performs a chaos action on the conversation key now, as the monitor's
// demo keys do: ActKill and ActFreeze hit the device process that holds it,
// ActForceRelease releases it. It returns the line that says what happened.
func (d *Demo) Act(ctx context.Context, kind ActionKind, key data.Key) (Line, error) {
	c := command{kind: kind, key: key, reply: make(chan Line, 1)}
	select {
	case d.cmds <- c:
	case <-ctx.Done():
		return Line{}, ctx.Err()
	}
	select {
	case l := <-c.reply:
		return l, nil
	case <-ctx.Done():
		return Line{}, ctx.Err()
	}
}

// errNoTarget: nobody holds what a chaos action needs.
var errNoTarget = errors.New("no device holds a conversation right now")
