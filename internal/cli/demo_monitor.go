package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"charm.land/bubbles/v2/key"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/demo/device"
	"github.com/leasetop/leasetop/keymap"
	"github.com/leasetop/leasetop/theme"
	"github.com/leasetop/leasetop/ui"
)

// runDemoMonitor runs the demo under the live monitor: the demo (devices,
// chaos) in the background, the monitor on the demo's database in front,
// with the devices pane (what each device process reports through the
// database) and keys to kill or freeze the device that holds the selected
// session.
// Quitting the monitor stops the demo; then the summary and the invariant
// check are printed.
func runDemoMonitor(ctx context.Context, env Env, db *demo.DB, cfg demo.Config, keys keymap.Map, th *theme.Theme) error {
	d, err := demo.New(db.Store(), cfg, nil)
	if err != nil {
		return err
	}
	demoCtx, stopDemo := context.WithCancel(ctx)
	defer stopDemo()
	uiCtx, stopUI := context.WithCancel(ctx)
	defer stopUI()
	var (
		wg     sync.WaitGroup
		out    demo.Outcome
		runErr error
	)
	wg.Go(func() {
		defer stopUI() // a demo with a --duration ends the monitor too
		out, runErr = d.Run(demoCtx)
	})
	uiErr := ui.Run(uiCtx, ui.Options{
		Config: ui.Config{
			Title:   "leasetop demo",
			Keys:    &keys,
			Actions: demoActions(uiCtx, d),
			Badge:   d.Badge,
			Devices: d.DeviceSource(uiCtx),
			Theme:   th,
		},
		Store:   db.Store(),
		Input:   env.Stdin,
		Output:  env.Stdout,
		NoColor: env.Getenv("NO_COLOR") != "",
		// withInterrupts ends ctx on a signal: the exit code says which one.
		NoSignalHandler: true,
	})
	stopDemo()
	fmt.Fprintln(env.Stderr, "leasetop demo: stopping the devices and removing what the demo started...")
	wg.Wait()
	if err := errors.Join(uiErr, runErr); err != nil {
		return err
	}
	out.Interrupted = false // quitting the monitor is how the demo ends
	demo.WriteSummary(env.Stdout, out)
	return demoOutcome(out, interruption(ctx))
}

// demoActions are the monitor's demo keys: chaos on the selected session.
func demoActions(ctx context.Context, d *demo.Demo) []ui.Action {
	act := func(kind demo.ActionKind) func(data.Lease, bool) (string, error) {
		return func(sel data.Lease, ok bool) (string, error) {
			if !ok {
				return "", errors.New("select a session first")
			}
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			l, err := d.Act(actx, kind, sel.Key)
			if err != nil {
				return "", fmt.Errorf("demo: %w", err)
			}
			return l.Sentence(), nil
		}
	}
	return []ui.Action{
		{
			Binding:     key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "demo: kill -9 the device holding the selected session")),
			Destructive: true,
			RunFunc:     act(demo.ActKill),
		},
		{
			Binding:     key.NewBinding(key.WithKeys("Z"), key.WithHelp("Z", "demo: freeze that device past its TTL (a zombie)")),
			Destructive: true,
			RunFunc:     act(demo.ActFreeze),
		},
		{
			Binding: key.NewBinding(key.WithKeys("S"), key.WithHelp("S", "demo: the devices' next strategy mix ("+device.MixCycle()+")")),
			RunFunc: func(data.Lease, bool) (string, error) {
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				l, err := d.CycleMix(actx)
				if err != nil {
					return "", fmt.Errorf("demo: %w", err)
				}
				return l.Sentence(), nil
			},
		},
	}
}
