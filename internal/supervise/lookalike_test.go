package supervise_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestRunLinesEscapeLookAlikes: the lines leasetop run prints about other
// runs come from the database, and show it as leasetop ls does. A holder
// whose label floods combining marks over a look-alike letter, with a
// look-alike attachment, is named in a refused run's line with every
// non-ASCII rune as \u{…}; and a holding run declining an asker whose label
// is a look-alike names it the same way.
func TestRunLinesEscapeLookAlikes(t *testing.T) {
	e := newEnv(t)
	e.dumpOnFailure(t)
	flood := "ph\u03bfne" + strings.Repeat("\u0301", 100)
	other := data.Key{Account: "acct", Session: "other"}
	holder := uuid.New()
	if _, err := e.store.AcquireWith(t.Context(), other, holder, time.Minute, flood, data.AcquireOptions{Attachment: "str\u0435am-7"}); err != nil {
		t.Fatal(err)
	}
	r := e.leasetop(t, "run", "--account", other.Account, "--session", other.Session, "--", "true")
	if got := r.Wait(t, 60*time.Second); got != 3 {
		t.Fatalf("refused run exit = %d, want 3; stderr %q", got, r.Stderr.String())
	}
	refusal := r.Stderr.String()
	for _, want := range []string{`("ph\u{3bf}ne\u{301}\u{301}`, `attachment "str\u{435}am-7"`} {
		if !strings.Contains(refusal, want) {
			t.Errorf("refusal %q does not contain %s", refusal, want)
		}
	}
	assertASCII(t, "the refusal", refusal)

	h := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "desktop", "--", "sh", "-c", holderScript)
	pgtest.Eventually(t, 30*time.Second, "the holder's command to start", func() bool { return strings.Contains(h.Stdout.String(), "started") })
	a := e.leasetop(t, "run", "--account", testKey.Account, "--session", testKey.Session, "--holder", "t\u0430blet", "--on-busy", "ask", "--", "true")
	if got := a.Wait(t, 60*time.Second); got != 3 {
		t.Fatalf("asker exit = %d, want 3 (declined); stderr %q", got, a.Stderr.String())
	}
	pgtest.Eventually(t, 30*time.Second, "the holder's line about the decline", func() bool { return strings.Contains(h.Stderr.String(), "declined the ask") })
	if line := h.Stderr.String(); !strings.Contains(line, `("t\u{430}blet")`) {
		t.Errorf("the holder's line %q does not name the asker as t\\u{430}blet", line)
	}
	assertASCII(t, "the holder's lines", h.Stderr.String())
}

// assertASCII fails t when s has a rune outside ASCII.
func assertASCII(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		if r >= 0x80 {
			t.Errorf("%s carry %U as it is: %q", what, r, s)
			return
		}
	}
}
