package ui

import (
	"context"
	"io"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// watchModel wraps the monitor's model as the benchmark does: it hands every
// message and View on, and closes shown once a View drew with key's lease in
// the state.
type watchModel struct {
	m     *Model
	key   data.Key
	shown chan struct{}
	views int
}

func (w *watchModel) Init() tea.Cmd { return w.m.Init() }

func (w *watchModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	_, cmd := w.m.Update(msg)
	return w, cmd
}

func (w *watchModel) View() tea.View {
	v := w.m.View()
	w.views++
	if _, ok := w.m.State().Lease(w.key); ok && w.shown != nil {
		close(w.shown)
		w.shown = nil
	}
	return v
}

// TestProgramRunsAWrappedModel runs the program Run runs around a wrapper
// model: the feed reaches the model through the wrapper, and cancelling ctx
// ends Run with nil once the feed has stopped.
func TestProgramRunsAWrappedModel(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	k := data.Key{Account: "acme", Session: "chat-1"}
	sqlAcquire(t, db.Conn(t), k, "1 min", "device-a")
	in, inW := io.Pipe()
	defer inW.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := NewProgram(ctx, Options{
		Config: Config{ReadOnly: true}, Store: db.Store(t),
		Input: in, Output: io.Discard, Environ: []string{"TERM=xterm-256color"},
	})
	if err != nil {
		t.Fatalf("NewProgram: %v", err)
	}
	shown := make(chan struct{})
	w := &watchModel{m: p.Model(), key: k, shown: shown}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, w, tea.WithWindowSize(120, 30), tea.WithoutSignalHandler()) }()
	select {
	case <-shown:
	case err := <-done:
		t.Fatalf("Run returned %v before the lease was drawn", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the wrapped model never drew the lease")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if w.views == 0 {
		t.Error("the program never called the wrapper's View")
	}
}

func TestNewProgramWithoutStore(t *testing.T) {
	t.Parallel()
	if _, err := NewProgram(context.Background(), Options{}); err == nil {
		t.Error("NewProgram without a store: err = nil, want an error")
	}
}
