package monitor

import (
	"testing"

	"github.com/leasetop/leasetop/internal/data"
)

// handedOver hands keyA from runs[0] to runs[1] (label "desk"), without the
// previous holder's label unless prev is set.
func handedOver(id int64, prev string) data.Event {
	return data.Event{ID: id, Kind: data.KindHandedOver, Key: keyA, RunID: runs[1], PrevRunID: runs[0], Fence: 11, PrevFence: 10,
		At: t0, ExpiresAt: t0.Add(15e9), Holder: "desk", PrevHolder: prev}
}

// TestStateNamesAHandOversPreviousHolder: the State names the previous
// holder of a hand-over whose event does not, from the lease
// it shows (a notification) or the grant before it among a resync's
// events, and keeps a label the event records.
func TestStateNamesAHandOversPreviousHolder(t *testing.T) {
	t.Parallel()
	phone := acquired(1, keyA, runs[0], 10, t0)
	phone.Holder = "phone"
	other := data.Event{ID: 1, Kind: data.KindAcquired, Key: keyA, RunID: runs[2], Fence: 9, At: t0, Holder: "other"}
	for _, tt := range []struct {
		name  string
		apply func(s *State)
		want  string
	}{
		{"notification", func(s *State) {
			s.ApplySync(syncOf(0, nil), t0)
			s.ApplyEvent(phone, t0)
			s.ApplyEvent(handedOver(2, ""), t0)
		}, "phone"},
		{"resync", func(s *State) { s.ApplySync(syncOf(0, nil, phone, handedOver(2, "")), t0) }, "phone"},
		{"recorded", func(s *State) { s.ApplySync(syncOf(0, nil, phone, handedOver(2, "recorded")), t0) }, "recorded"},
		{"another run held it", func(s *State) { s.ApplySync(syncOf(0, nil, other, handedOver(2, "")), t0) }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewState(Config{})
			tt.apply(s)
			if got := s.Events()[0]; got.Kind != data.KindHandedOver || got.PrevHolder != tt.want {
				t.Errorf("newest event = %s with PrevHolder %q, want handed_over with %q", got.Kind, got.PrevHolder, tt.want)
			}
		})
	}
	evs := []data.Event{phone, handedOver(2, "")}
	got := NamePrevHolders(evs, nil)
	if got[1].PrevHolder != "phone" || evs[1].PrevHolder != "" {
		t.Errorf("NamePrevHolders = %q (its input now %q), want phone in a copy", got[1].PrevHolder, evs[1].PrevHolder)
	}
	first := NamePrevHolders(evs[1:], func(Key) (data.Lease, bool) { return data.Lease{RunID: runs[0], Holder: "before"}, true })
	if first[0].PrevHolder != "before" {
		t.Errorf("NamePrevHolders of a session's first event = %q, want the label before says", first[0].PrevHolder)
	}
}
