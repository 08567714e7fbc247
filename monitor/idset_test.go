package monitor

import (
	"math/rand/v2"
	"testing"
)

func TestIDSet(t *testing.T) {
	t.Parallel()
	var s idSet
	model := map[int64]bool{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		id := rng.Int64N(400)
		if got, want := s.Add(id), !model[id]; got != want {
			t.Fatalf("Add(%d) = %v, want %v", id, got, want)
		}
		model[id] = true
	}
	for id := int64(-2); id < 402; id++ {
		if got, want := s.Has(id), model[id]; got != want {
			t.Fatalf("Has(%d) = %v, want %v", id, got, want)
		}
	}
	for i := 1; i < len(s.r); i++ {
		if s.r[i-1].hi+1 >= s.r[i].lo {
			t.Fatalf("ranges %v and %v should have been merged", s.r[i-1], s.r[i])
		}
	}
}

func TestIDSetConsecutiveIsOneRange(t *testing.T) {
	t.Parallel()
	var s idSet
	for id := int64(1); id <= 100000; id++ {
		s.Add(id)
	}
	s.Add(100002) // a gap: a rolled-back transaction burned 100001
	if got, want := s.ranges(), 2; got != want {
		t.Errorf("ranges = %d, want %d", got, want)
	}
	s.Add(100001) // the late commit fills it
	if got, want := s.ranges(), 1; got != want {
		t.Errorf("ranges after filling the gap = %d, want %d", got, want)
	}
}
