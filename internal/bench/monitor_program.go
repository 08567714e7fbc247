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
	pctx, cancel := context.WithCancel(ctx)
	in, inW := io.Pipe()
	p, err := ui.NewProgram(pctx, ui.Options{
		Config: ui.Config{ReadOnly: true}, Store: store, Feed: feed,
		Input: in, Output: io.Discard, Environ: []string{"TERM=xterm-256color"},
	})
	if err != nil {
		cancel()
		return nil, nil, err
	}
	mp := &monitorProgram{cancel: cancel, done: make(chan error, 1), loaded: make(chan struct{}), frames: &frameLog{h: &Histogram{}},
		input: inW, answers: newAnswerLog()}
	model := wrap(&timedModel{m: p.Model(), frames: mp.frames, answers: mp.answers, onLoad: func() {
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
