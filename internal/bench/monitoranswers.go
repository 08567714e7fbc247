package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
)

// answerLog times a key's answer: from writing the key to the program's
// input to the end of the first View after the Update that handled it (the
// frame that shows the sorted or filtered rows).
type answerLog struct {
	mu      sync.Mutex
	sent    time.Time
	waiting bool // a key was sent and its frame not drawn yet
	handled bool // the program's Update has had the key
	done    chan time.Duration
}

func newAnswerLog() *answerLog { return &answerLog{done: make(chan time.Duration, 1)} }

// update is called with every message the program's Update gets.
func (a *answerLog) update(msg tea.Msg) {
	if _, ok := msg.(tea.KeyPressMsg); !ok {
		return
	}
	a.mu.Lock()
	if a.waiting {
		a.handled = true
	}
	a.mu.Unlock()
}

// viewed is called after every View.
func (a *answerLog) viewed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting && a.handled {
		a.waiting = false
		a.done <- time.Since(a.sent)
	}
}

// press writes key to in and waits for its answer.
func (a *answerLog) press(ctx context.Context, in io.Writer, key string) (time.Duration, error) {
	a.mu.Lock()
	a.sent, a.waiting, a.handled = time.Now(), true, false
	a.mu.Unlock()
	if _, err := io.WriteString(in, key); err != nil {
		return 0, fmt.Errorf("type %q: %w", key, err)
	}
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	select {
	case d := <-a.done:
		return d, nil
	case <-t.C:
		return 0, fmt.Errorf("no frame answered %q within a minute", key)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// monitorAnswers presses the sort key through all four orders, then types a
// filter that matches sessions (the costliest: no interned text answers it)
// one key at a time and erases it again: each key's answer is timed.
func monitorAnswers(ctx context.Context, mon *monitorProgram) (sorts, filters *Histogram, err error) {
	sorts, filters = &Histogram{}, &Histogram{}
	for range 4 {
		d, err := mon.answers.press(ctx, mon.input, "s")
		if err != nil {
			return nil, nil, err
		}
		sorts.Record(d)
	}
	if _, err := mon.answers.press(ctx, mon.input, "/"); err != nil {
		return nil, nil, err
	}
	const filter = "s0004"
	for _, k := range filter {
		d, err := mon.answers.press(ctx, mon.input, string(k))
		if err != nil {
			return nil, nil, err
		}
		filters.Record(d)
	}
	for range filter {
		d, err := mon.answers.press(ctx, mon.input, "\x7f") // backspace: the last one clears the filter
		if err != nil {
			return nil, nil, err
		}
		filters.Record(d)
	}
	if _, err := mon.answers.press(ctx, mon.input, "\r"); err != nil {
		return nil, nil, err
	}
	return sorts, filters, nil
}
