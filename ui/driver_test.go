package ui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// driver runs a Model the way a Bubble Tea program does, without a
// terminal: it runs the commands Update returns on goroutines and feeds their
// messages back to Update on the test's goroutine, one at a time.
type driver struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
	stop chan struct{}
	wg   sync.WaitGroup
}

// liveModel returns a driven model on a real feed of store; everything stops
// when the test ends.
func liveModel(t *testing.T, store *data.Store, readOnly bool, w, h int) *driver {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	feed := monitor.NewFeed(store, monitor.FeedConfig{DeltaInterval: 100 * time.Millisecond})
	stopFeed := feed.Start(ctx)
	m, err := New(Config{Source: storeSource(ctx, store, feed, readOnly, 0), ReadOnly: readOnly, Database: DatabaseLabel(store)})
	if err != nil {
		cancel()
		stopFeed()
		t.Fatalf("New: %v", err)
	}
	d := &driver{t: t, m: m, msgs: make(chan tea.Msg, 64), stop: make(chan struct{})}
	t.Cleanup(func() {
		cancel()
		stopFeed()
		close(d.stop)
		d.wg.Wait()
	})
	d.send(tea.WindowSizeMsg{Width: w, Height: h})
	d.run(m.Init())
	return d
}

// run executes cmd on a goroutine, expanding batches.
func (d *driver) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	d.wg.Go(func() {
		msg := cmd()
		if batch, ok := msg.(tea.BatchMsg); ok {
			for _, c := range batch {
				d.run(c)
			}
			return
		}
		if msg == nil {
			return
		}
		select {
		case d.msgs <- msg:
		case <-d.stop:
		}
	})
}

// send delivers msg to Update and runs the command it returns.
func (d *driver) send(msg tea.Msg) {
	_, cmd := d.m.Update(msg)
	d.run(cmd)
}

// press sends key presses by name (see keyMsg).
func (d *driver) press(keys ...string) {
	for _, k := range keys {
		d.send(keyMsg(k))
	}
}

// waitFor delivers messages until cond holds, for up to 30 s.
func (d *driver) waitFor(what string, cond func(m *Model) bool) {
	d.t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for !cond(d.m) {
		select {
		case msg := <-d.msgs:
			d.send(msg)
		case <-deadline.C:
			d.t.Fatalf("waiting for %s; screen:\n%s", what, screen(d.m))
		}
	}
}

// waitScreen waits until the screen contains text.
func (d *driver) waitScreen(text string) {
	d.t.Helper()
	d.waitFor("the screen to show "+text, func(m *Model) bool { return strings.Contains(screen(m), text) })
}

// selectSession moves the cursor to key with the navigation keys.
func (d *driver) selectSession(key data.Key) {
	d.t.Helper()
	d.press("g")
	for range len(d.m.rows) {
		if l, ok := d.m.selected(); ok && l.Key == key {
			return
		}
		d.press("j")
	}
	d.t.Fatalf("session %v not in the table:\n%s", key, screen(d.m))
}
