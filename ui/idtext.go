package ui

import (
	"strings"

	"github.com/leasetop/leasetop/internal/termtext"
)

// The mark of the runes outside ASCII in ids and holder labels: underline
// on and off. Only that attribute, so the mark nests in a row's or an
// event's own style (the selection's reverse video, a colour) without ending
// it, and it shows without colour (NO_COLOR) too.
const (
	markOn  = "\x1b[4m"
	markOff = "\x1b[24m"
)

// idText is an id or a holder label for the screen: cleaned and cut to
// width like clean, with its runes outside ASCII underlined, so that
// "chat-1" and "chаt-1" (a Cyrillic а) do not look the same. The detail
// view also spells such a value out (exactText).
func idText(s string, width int) string {
	shown := clean(s, width)
	if !termtext.HasNonASCII(s) {
		return shown
	}
	tail := ""
	if width > 0 && shown != clean(s, 0) { // cut: the ellipsis is clean's, not the value's
		shown, tail = strings.TrimSuffix(shown, termtext.Ellipsis), termtext.Ellipsis
	}
	var b strings.Builder
	marked := false
	for _, r := range shown {
		if (r >= 0x80) != marked {
			marked = !marked
			if marked {
				b.WriteString(markOn)
			} else {
				b.WriteString(markOff)
			}
		}
		b.WriteRune(r)
	}
	if marked {
		b.WriteString(markOff)
	}
	return b.String() + tail
}

// exactText is an id or a holder label in full for the detail views: idText,
// followed, when it has runes outside ASCII, by its spelling with them as
// \u{…} (termtext.Mark), which tells look-alikes apart in plain text.
func (m *Model) exactText(s string) string {
	t := idText(s, 0)
	if termtext.HasNonASCII(s) {
		t += m.styles.warn.Render("  non-ASCII: " + termtext.Mark(s, 0))
	}
	return t
}
