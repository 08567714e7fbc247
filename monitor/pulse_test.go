package monitor

import (
	"slices"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/data"
)

// TestPulseCountsKindsInSteps: the header's pulse counts each live event in
// the step it arrived in, transitions (takeovers among them) apart from
// rejected renewals; older steps fall off, and reading does not change it.
func TestPulseCountsKindsInSteps(t *testing.T) {
	t.Parallel()
	s := NewState(Config{})
	s.ApplySync(syncOf(0, nil), t0)
	ev := func(id int64, k data.Kind, at time.Time) {
		e := acquired(id, keyA, runs[0], id, at)
		e.Kind = k
		if !s.ApplyEvent(e, at) {
			t.Fatalf("event %d not applied", id)
		}
	}
	ev(1, data.KindAcquired, t0)                              // step 0
	ev(2, data.KindTakenOver, t0.Add(12*time.Second))         // step 1
	ev(3, data.KindRenewRejected, t0.Add(13*time.Second))     // step 1
	ev(4, data.KindTakenOver, t0.Add(25*time.Second))         // step 2
	ev(5, data.KindForceReleased, t0.Add(29*time.Second+5e8)) // step 2
	now := t0.Add(29*time.Second + 9e8)
	p := s.Pulse(now, 3, 10*time.Second)
	if p.Step != 10*time.Second {
		t.Errorf("step %v, want 10s", p.Step)
	}
	for _, c := range []struct {
		name      string
		got, want []int
	}{
		{"transitions", p.Transitions, []int{1, 1, 2}},
		{"takeovers", p.Takeovers, []int{0, 1, 1}},
		{"zombies", p.Zombies, []int{0, 1, 0}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if again := s.Pulse(now, 3, 10*time.Second); !slices.Equal(again.Transitions, p.Transitions) {
		t.Errorf("a second read = %v, want %v unchanged", again.Transitions, p.Transitions)
	}
	later := s.Pulse(now.Add(20*time.Second), 3, 10*time.Second)
	if want := []int{2, 0, 0}; !slices.Equal(later.Transitions, want) {
		t.Errorf("20 s later = %v, want %v (the older steps gone)", later.Transitions, want)
	}
	if late := s.Pulse(now.Add(time.Hour), 3, 10*time.Second); !slices.Equal(late.Transitions, []int{0, 0, 0}) {
		t.Errorf("an hour later = %v, want nothing", late.Transitions)
	}
}
