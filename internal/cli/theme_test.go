package cli_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/internal/testkit/proctest"
)

// sgr matches a select-graphic-rendition sequence.
var sgr = regexp.MustCompile(`\x1b\[([0-9;]*)m`)

// colourSGR returns the first sequence in s that sets a foreground or
// background colour ("" when none does): 30-37, 90-97, 40-47, 100-107, 38
// or 48 among its parameters (39 and 49, back to the default, set none).
func colourSGR(s string) string {
	for _, m := range sgr.FindAllStringSubmatch(s, -1) {
		for p := range strings.SplitSeq(m[1], ";") {
			n, err := strconv.Atoi(p)
			if err == nil && (n >= 30 && n <= 38 || n >= 40 && n <= 48 || n >= 90 && n <= 97 || n >= 100 && n <= 107) {
				return m[0]
			}
		}
	}
	return ""
}

// TestWatchThemeAndNoColor runs the real monitor in tmux with the
// high-contrast theme: the screen carries the theme's colours; with
// NO_COLOR set as well it carries none, and still shows the states
// (● LIVE, the TTL bar's glyphs).
func TestWatchThemeAndNoColor(t *testing.T) {
	db := pgtest.New(t)
	if _, err := db.Conn(t).Exec(context.Background(), `SELECT lease.acquire('acme', 'chat-1', $1, '1 hour', 'desktop')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		env     []string
		colours bool
	}{
		{"high-contrast", nil, true},
		{"high-contrast with NO_COLOR", []string{"NO_COLOR=1"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := append([]string{"DATABASE_URL=" + db.URL, "HOME=" + t.TempDir(), "TERM=xterm-256color"}, tt.env...)
			tm := proctest.StartTmux(t, 120, 20, env, builtBinary(t)+" watch --theme high-contrast")
			tm.WaitFor("the lease and the live badge", 30*time.Second, func(s string) bool {
				return strings.Contains(s, "● LIVE") && strings.Contains(s, "chat-1") && strings.Contains(s, "████")
			})
			styled := tm.StyledScreen()
			if got := colourSGR(styled); (got != "") != tt.colours {
				t.Errorf("colour sequence %q on the screen, want colours %v:\n%q", got, tt.colours, styled)
			}
			tm.Keys("q")
		})
	}
}
