package termtext

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Mark returns an id or a holder label for plain-text output (leasetop ls,
// events) so that two that differ never print the same, however alike they
// look: "chat-1" and "chаt-1" (a Cyrillic а) print as chat-1 and
// ch\u{430}t-1. It is Clean, and also writes every other rune outside ASCII
// as \u{hex} and a backslash as \\ (so an id spelling an escape in ASCII
// cannot pass for one), the way git quotes paths. Printable ASCII prints as
// it is. With width > 0 the result is cut to width cells like Clean's, and
// then no longer tells everything apart.
func Mark(s string, width int) string {
	if isSafe(s) && !strings.Contains(s, `\`) {
		return Clean(s, width)
	}
	var b strings.Builder
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case unsafeRune(r):
			b.WriteString(escape(string(r)))
		case r >= 0x80:
			fmt.Fprintf(&b, `\u{%x}`, r)
		default:
			b.WriteRune(r)
		}
	}
	out := b.String()
	if width > 0 && ansi.StringWidth(out) > width {
		out = ansi.Truncate(out, width, Ellipsis)
	}
	return out
}

// Quote returns a holder label, an attachment, a reason or any other
// untrusted text for a line a user reads, in double quotes: Mark's escapes,
// and a double quote as \". Every line leasetop prints quotes such text
// with it (leasetop run's refusals, asks and losses), so it can neither act
// on the terminal nor pass for other text: a look-alike letter, a flood of
// combining marks or a bidirectional control each print as escapes.
func Quote(s string) string {
	return `"` + strings.ReplaceAll(Mark(s, 0), `"`, `\"`) + `"`
}

// HasNonASCII reports whether s has a rune outside ASCII: an id or label a
// screen should mark, since it may look like another (see Mark).
func HasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}
