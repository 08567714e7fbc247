package data_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// FuzzDecodeEvent: any payload anyone publishes on lease_events decodes to a
// well-formed event or ErrMalformed, never a panic, and never lets control
// characters through in the key.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(`{"id":1,"at":"2026-11-30T08:00:00Z","kind":"acquired","account_id":"a","session_id":"s","run_id":"4f0e2f5a-6a43-4a4e-9a5e-1f2e3d4c5b6a","prev_run_id":null,"fence":3,"expires_at":"2026-11-30T08:00:15Z","holder":"desktop"}`)
	f.Add(`{"id":0,"kind":"renewed","account_id":"a","session_id":"s","run_id":"4f0e2f5a-6a43-4a4e-9a5e-1f2e3d4c5b6a"}`)
	f.Add(`{"id":9,"kind":"truncated"}`)
	f.Add(`{"id":10,"kind":"limit_set","account_id":"a","session_id":"","actor":"ops","reason":"2 slots"}`)
	f.Add(`not json`)
	f.Add(`{"id":1,"kind":"acquired","account_id":"\u001b[2J","session_id":"s"}`)
	f.Fuzz(func(t *testing.T, payload string) {
		ev, err := data.DecodeEvent(payload)
		if err != nil {
			return
		}
		if !ev.Kind.Valid() {
			t.Fatalf("decoded invalid kind %q", ev.Kind)
		}
		switch {
		case ev.Kind == data.KindTruncated:
		case ev.Kind.AccountWide():
			if ev.Key.Account == "" || ev.Key.Session != "" || strings.IndexFunc(ev.Key.Account, unicode.IsControl) >= 0 {
				t.Fatalf("decoded an account's event of key %q: want an account without control characters, and no session", ev.Key)
			}
		default:
			for _, s := range []string{ev.Key.Account, ev.Key.Session} {
				if s == "" || strings.IndexFunc(s, unicode.IsControl) >= 0 {
					t.Fatalf("decoded key %q with an empty id or control characters", ev.Key)
				}
			}
		}
	})
}

// TestEventJSONRoundTrip: MarshalJSON writes what DecodeEvent reads, as the
// notification payload does.
func TestEventJSONRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	want := data.Event{ID: 7, At: at, Kind: data.KindTakenOver, Key: data.Key{Account: "a", Session: `s"\`},
		RunID: uuid.New(), PrevRunID: uuid.New(), Fence: 9, PrevFence: 3, ExpiresAt: at.Add(time.Minute),
		PrevExpiresAt: at.Add(-time.Second), Holder: "phone", Actor: "app"}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := data.DecodeEvent(string(b))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeEvent(Marshal(ev)) = %+v, %v; want %+v", got, err, want)
	}
	if !strings.Contains(string(b), `"reason":null`) {
		t.Errorf("absent reason encoded as %s, want null", b)
	}
}
