package demo_test

import (
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/demo"
)

func TestScheduleIsReproducible(t *testing.T) {
	const ttl = 4 * time.Second
	a, b, c := demo.NewSchedule(42, ttl), demo.NewSchedule(42, ttl), demo.NewSchedule(43, ttl)
	same, differs := true, false
	for range 30 {
		x, y, z := a.Next(), b.Next(), c.Next()
		same = same && x == y
		differs = differs || x != z
	}
	if !same {
		t.Error("two schedules with seed 42 differ; want the same actions at the same times")
	}
	if !differs {
		t.Error("the schedules with seeds 42 and 43 are identical; want the seed to matter")
	}
}

func TestScheduleShowsEveryKindEarly(t *testing.T) {
	const ttl = 2 * time.Second
	for seed := range int64(20) {
		s := demo.NewSchedule(seed, ttl)
		kinds := map[demo.ActionKind]bool{}
		prev := time.Duration(0)
		for i := range 9 {
			a := s.Next()
			if i < 3 {
				kinds[a.Kind] = true
			}
			gap := a.At - prev
			switch {
			case i == 0 && a.At != ttl*3/4:
				t.Errorf("seed %d: first action at %s, want %s", seed, a.At, ttl*3/4)
			case i > 0 && (gap < ttl*5/4 || gap > ttl*9/4):
				t.Errorf("seed %d: action %d comes %s after the previous one, want 1.25 to 2.25 TTLs", seed, i, gap)
			}
			prev = a.At
		}
		if len(kinds) != 3 {
			t.Errorf("seed %d: the first three actions are %v, want one kill, one freeze and one forced release", seed, kinds)
		}
	}
}

func TestFreezeOutlastsTheTTL(t *testing.T) {
	for _, ttl := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Minute} {
		if got := demo.FreezeFor(ttl); got < ttl+time.Second || got < ttl*3/2 {
			t.Errorf("FreezeFor(%s) = %s, want at least TTL + max(TTL/2, 1s)", ttl, got)
		}
	}
}
