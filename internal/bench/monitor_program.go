package bench

import (
	"context"
	"io"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
	"github.com/leasetop/leasetop/ui"
)

// runMonitor starts the monitor's program on store, its feed configured by
// feed, exactly as ui.Run runs it (ui.NewProgram), read-only, drawing a 200x50 screen into io.Discard,
// its every View timed (timedModel). wrap gives the model the program runs:
// the timedModel itself, or a model around it (the timeline's probe). It
// returns the program and the writer of its input, where keys written are
// read and parsed by Bubble Tea as a terminal's.
func runMonitor(ctx context.Context, store *data.Store, feed monitor.FeedConfig, wrap func(*timedModel) tea.Model) (*monitorProgram, io.Writer, error) {
	return runProgram(ctx, ui.Options{Config: ui.Config{ReadOnly: true}, Store: store, Feed: feed}, nil, wrap)
}

// runMonitorOf is runMonitor of the monitor opt describes (a monitor of
// contexts), its first picture the first Update after which loaded holds.
func runMonitorOf(ctx context.Context, opt ui.Options, loaded func(*ui.Model) bool) (*monitorProgram, io.Writer, error) {
	return runProgram(ctx, opt, loaded, func(t *timedModel) tea.Model { return t })
}

// runProgram is runMonitor of opt (its input and output set here), its
// first picture the first Update after which loaded holds (nil: the first
// resync applied).
func runProgram(ctx context.Context, opt ui.Options, loaded func(*ui.Model) bool, wrap func(*timedModel) tea.Model) (*monitorProgram, io.Writer, error) {
	pctx, cancel := context.WithCancel(ctx)
	in, inW := io.Pipe()
	opt.Input, opt.Output, opt.Environ = in, io.Discard, []string{"TERM=xterm-256color"}
	p, err := ui.NewProgram(pctx, opt)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	mp := &monitorProgram{cancel: cancel, done: make(chan error, 1), loaded: make(chan struct{}), frames: &frameLog{h: &Histogram{}},
		input: inW, answers: newAnswerLog()}
	model := wrap(&timedModel{m: p.Model(), frames: mp.frames, answers: mp.answers, loaded: loaded, onLoad: func() {
		mp.loadTime = time.Since(mp.started)
		close(mp.loaded)
	}})
	mp.started = time.Now()
	go func() { // owned: Stop cancels the program and receives done
		err := p.Run(pctx, model, tea.WithWindowSize(200, 50), tea.WithoutSignalHandler())
		_ = in.Close()  // a key typed after the end fails instead of waiting
		_ = inW.Close() // and the input's reader ends
		mp.done <- err
	}()
	return mp, inW, nil
}
