package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestLookAlikeIDsPrintApart: three leases that all read "globex chat-1
// phone pid 16663" on a terminal (a Cyrillic а in one session id, a Greek
// ο in one holder label) print apart in ls and events, their non-ASCII
// runes as \u{…}; --json keeps the exact text.
func TestLookAlikeIDsPrintApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	acquire(t, conn, "globex", "chat-1", "1 min", "phone pid 16663")
	acquire(t, conn, "globex", "ch\u0430t-1", "1 min", "phone pid 16663")
	acquire(t, conn, "globex", "chat-2", "1 min", "ph\u03bfne pid 16663")

	out, errOut, code := leasetop(ctx, db.URL, "ls")
	if code != 0 {
		t.Fatalf("ls: code %d err %q", code, errOut)
	}
	for _, want := range []string{"chat-1", `ch\u{430}t-1`, `ph\u{3bf}ne pid 16663`} {
		if !strings.Contains(out, want) {
			t.Errorf("ls lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\u0430\u03bf") {
		t.Errorf("ls prints the look-alike letters as they are:\n%s", out)
	}

	out, errOut, code = leasetop(ctx, db.URL, "events")
	if code != 0 {
		t.Fatalf("events: code %d err %q", code, errOut)
	}
	for _, want := range []string{"acquired       globex/chat-1 ", `globex/ch\u{430}t-1 `, `holder="ph\u{3bf}ne pid 16663"`} {
		if !strings.Contains(out, want) {
			t.Errorf("events lacks %q:\n%s", want, out)
		}
	}

	out, _, code = leasetop(ctx, db.URL, "ls", "--json")
	var got struct {
		Leases []struct {
			SessionID string `json:"session_id"`
			Holder    string `json:"holder"`
		} `json:"leases"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("ls --json: code %d, %v:\n%s", code, err, out)
	}
	exact := map[string]bool{}
	for _, l := range got.Leases {
		exact[l.SessionID+" "+l.Holder] = true
	}
	for _, want := range []string{"chat-1 phone pid 16663", "ch\u0430t-1 phone pid 16663", "chat-2 ph\u03bfne pid 16663"} {
		if !exact[want] {
			t.Errorf("ls --json lacks the exact %+q: %v", want, exact)
		}
	}
}
