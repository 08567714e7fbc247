package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// heldCases are refusals in every shape heldMessage words, with the line
// leasetop prints for each.
func heldCases() []struct {
	name string
	h    *lease.HeldError
	want string
} {
	key := data.Key{Account: "acme", Session: "chat-1"}
	run := uuid.MustParse("0131020a-0000-8000-8000-000000000001")
	asker := uuid.MustParse("05437c9e-0000-8000-8000-000000000002")
	ask := &data.PendingAsk{RunID: asker, Holder: "phone", Remaining: 2345 * time.Millisecond}
	return []struct {
		name string
		h    *lease.HeldError
		want string
	}{
		{"held", &lease.HeldError{Key: key, RunID: run, Holder: "desktop", Remaining: 4321 * time.Millisecond, Preemptible: true},
			`lease acme/chat-1 is held by run 0131020a-0000-8000-8000-000000000001 ("desktop") for 4.3s more`},
		{"everything", &lease.HeldError{Key: key, RunID: run, Holder: "checkout", Remaining: time.Second, Attachment: "pay-1", Queued: 2, Ask: ask},
			`lease acme/chat-1 is held by run 0131020a-0000-8000-8000-000000000001 ("checkout") for 1s more, not preemptible, attachment "pay-1" (queued: 2 ahead); ` +
				`run 05437c9e-0000-8000-8000-000000000002 ("phone") has asked it to hand over (2.3s left)`},
		{"free, queued", &lease.HeldError{Key: key, Queued: 3},
			`lease acme/chat-1 is free but reserved for its queue (queued: 3 ahead)`},
		{"gone", &lease.HeldError{Key: key},
			`lease acme/chat-1 is held by another run`},
		{"gone, asked", &lease.HeldError{Key: key, Ask: ask},
			`lease acme/chat-1 is held by another run; run 05437c9e-0000-8000-8000-000000000002 ("phone") has asked it to hand over (2.3s left)`},
	}
}

// TestHeldMessageWording: the CLI's one line for every shape of refusal.
func TestHeldMessageWording(t *testing.T) {
	for _, tc := range heldCases() {
		if got := heldMessage(tc.h); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestHeldMessageIsTheLibrarysText: the CLI's line and HeldError.Error are
// one text (one formatter): they differ only where the CLI makes database
// text inert.
func TestHeldMessageIsTheLibrarysText(t *testing.T) {
	for _, tc := range heldCases() {
		if got := tc.h.Error(); got != tc.want {
			t.Errorf("%s: HeldError.Error()\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	h := heldCases()[1].h
	h.Holder, h.Attachment, h.Ask.Holder = "desk\x1b[2Jtop", "pay\u202e1", "ph\none"
	got := heldMessage(h)
	for _, raw := range []string{"\x1b", "\u202e", "\n"} {
		if strings.Contains(got, raw) {
			t.Errorf("heldMessage let %q through: %q", raw, got)
		}
	}
}

// TestRunLinesMarkUntrustedText: every line leasetop run prints about
// another run (a refusal, an ask's outcome, a loss) shows database text as
// leasetop ls does: a look-alike letter, a flood of combining marks and a
// bidirectional control each print as escapes, so the line is ASCII and no
// label can pass for another or smear over the line.
func TestRunLinesMarkUntrustedText(t *testing.T) {
	key := data.Key{Account: "acme", Session: "ch\u0430t-1"} // a Cyrillic а
	flood := "ph\u03bfne" + strings.Repeat("\u0301", 100)    // a Greek ο, then 100 combining acute accents
	bidi := "pay\u202e1"
	run := uuid.MustParse("0131020a-0000-8000-8000-000000000001")
	ask := &data.PendingAsk{RunID: run, Holder: "t\u0430blet", Remaining: time.Second}
	lines := map[string]string{
		"refusal": heldMessage(&lease.HeldError{Key: key, RunID: run, Holder: flood, Remaining: time.Second, Attachment: bidi, Ask: ask}),
		"loss": lineOf(&lease.LostError{Key: key, Fence: 3, Reason: lease.ErrPreempted, By: data.Event{Kind: data.KindPreempted,
			RunID: run, Holder: flood, Actor: "\u0430dmin", Reason: "moved" + strings.Repeat("\u0308", 50)}}),
		"busy ask":    askMessage(&lease.AskError{Key: key, Reason: lease.ErrAskBusy, Ask: *ask}, runOptions{}),
		"queued ask":  askMessage(&lease.AskError{Key: key, Reason: lease.ErrAskQueued, Ahead: 2}, runOptions{}),
		"ask's error": lineOf(&lease.AskError{Key: key, Reason: lease.ErrAskBusy, Ask: data.PendingAsk{Holder: flood}}),
	}
	for name, line := range lines {
		for i, r := range line {
			if r >= 0x80 {
				t.Errorf("%s line has %U at byte %d, want every non-ASCII rune escaped: %s", name, r, i, line)
				break
			}
		}
		if !strings.Contains(line, `ch\u{430}t-1`) {
			t.Errorf("%s line = %s, want the key's look-alike letter as \\u{430}", name, line)
		}
	}
	for name, want := range map[string][]string{
		"refusal":     {`("ph\u{3bf}ne\u{301}\u{301}`, `attachment "pay\u202e1"`, `("t\u{430}blet")`},
		"loss":        {`"ph\u{3bf}ne\u{301}`, `login "\u{430}dmin"`, `reason "moved\u{308}`},
		"busy ask":    {`("t\u{430}blet")`},
		"queued ask":  {"2 queued ahead"},
		"ask's error": {`("ph\u{3bf}ne\u{301}`},
	} {
		for _, w := range want {
			if !strings.Contains(lines[name], w) {
				t.Errorf("%s line = %s, want it to contain %s", name, lines[name], w)
			}
		}
	}
}
