package data_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// serveRecorder is a Handler with every optional part: it records what
// Serve called, and on which goroutine (the test checks that the calls
// never overlap).
type serveRecorder struct {
	mu      sync.Mutex
	busy    bool
	overlap bool
	got     []string
	events  chan data.Event
	wake    chan struct{}
	timer   *time.Timer
}

func (r *serveRecorder) enter(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.overlap = r.overlap || r.busy
	r.busy = true
	r.got = append(r.got, what)
}

func (r *serveRecorder) leave() { r.mu.Lock(); r.busy = false; r.mu.Unlock() }

func (r *serveRecorder) saw(what string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.got {
		if g == what {
			return true
		}
	}
	return false
}

func (r *serveRecorder) HandleDelivery(_ context.Context, d data.Delivery) {
	r.enter("delivery")
	defer r.leave()
	for _, ev := range d.Events {
		r.events <- ev
	}
}

func (r *serveRecorder) HandleState(_ context.Context, st data.ListenerState) {
	r.enter("state " + st.Status.String())
	r.leave()
}

func (r *serveRecorder) Wake() <-chan struct{}           { return r.wake }
func (r *serveRecorder) HandleWake(context.Context)      { r.enter("wake"); r.leave() }
func (r *serveRecorder) Timer() <-chan time.Time         { return r.timer.C }
func (r *serveRecorder) HandleTimer(ctx context.Context) { r.enter("timer"); r.leave() }

// TestServeHandsEverythingToOneHandler: Listener.Serve runs the listener
// and calls the handler for deliveries, state changes, wake-ups and its
// timer, one call at a time, and returns once ctx ended and the listener
// stopped.
func TestServeHandsEverythingToOneHandler(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	r := &serveRecorder{events: make(chan data.Event, 16), wake: make(chan struct{}, 1), timer: time.NewTimer(time.Hour)}
	l := s.NewListener(data.ListenerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx, r) }()
	pgtest.Eventually(t, 15*time.Second, "the listener to be live", func() bool { return r.saw("state LIVE") })

	k := data.Key{Account: "acct", Session: "served"}
	if _, err := s.Acquire(context.Background(), k, uuid.New(), time.Minute, "h"); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-r.events:
		if ev.Key != k || ev.Kind != data.KindAcquired {
			t.Errorf("delivered %s of %v, want the acquire of %v", ev.Kind, ev.Key, k)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no delivery within 15s of the acquire")
	}
	r.wake <- struct{}{}
	r.timer.Reset(0)
	pgtest.Eventually(t, 15*time.Second, "HandleWake and HandleTimer", func() bool { return r.saw("wake") && r.saw("timer") })

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil after ctx ended", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return within 15s of ctx's end")
	}
	if st := l.State(); st.Status != data.ListenerStopped {
		t.Errorf("after Serve the listener is %v, want stopped", st.Status)
	}
	if r.overlap {
		t.Error("Serve called the handler while a call was running")
	}
}

// TestServeKeepsServingWhenTheListenerCannotStart: a listen DSN that does
// not parse stops the listener at once; Serve goes on serving the handler's
// timer until ctx ends, then returns the *DSNError.
func TestServeKeepsServingWhenTheListenerCannotStart(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s := db.Store(t)
	r := &serveRecorder{events: make(chan data.Event, 1), wake: make(chan struct{}, 1), timer: time.NewTimer(0)}
	l := s.NewListener(data.ListenerConfig{DSN: "postgres://%zz"})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.Serve(ctx, r) }()
	pgtest.Eventually(t, 15*time.Second, "HandleTimer", func() bool { return r.saw("timer") })
	cancel()
	var dsnErr *data.DSNError
	if err := <-served; !errors.As(err, &dsnErr) {
		t.Errorf("Serve = %v, want the *DSNError", err)
	}
}

// TestEveryReaderServes: outside package data no program code reads a
// listener's deliveries itself: every in-process reader is a Handler of
// Listener.Serve (the one loop), or reads a monitor.Feed.
func TestEveryReaderServes(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		if root == filepath.Dir(root) {
			t.Fatal("no go.mod above the package")
		}
		root = filepath.Dir(root)
	}
	here, _ := filepath.Abs(".")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == here {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), ".Deliveries()") {
			rel, _ := filepath.Rel(root, path)
			t.Errorf("%s reads a listener's deliveries itself: serve them (data.Listener.Serve) or read a monitor.Feed", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
