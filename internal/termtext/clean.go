// Package termtext makes untrusted text safe to print on a terminal.
//
// Lease ids, holder labels, reasons, role names and error messages come from
// the database or from anyone who can NOTIFY on the lease channel. Printed as
// they are, a control character or an escape sequence in them would be
// obeyed by the terminal: clear the screen, move the cursor, set the window
// title, or reorder text (bidirectional overrides). Clean is the one place
// where such text is made inert; every screen and every text output of
// leasetop passes untrusted values through it.
package termtext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Ellipsis ends text that Clean shortened.
const Ellipsis = "…"

// Clean returns s with every control character and every character that
// could change how the terminal shows the rest of the line replaced by a
// visible escape (ESC becomes `\x1b`, U+202E becomes `\u202e`), and invalid
// UTF-8 replaced by U+FFFD. With width > 0 the result is at most width
// terminal cells wide, shortened with an ellipsis when it had to be cut.
//
// The result holds no byte that a terminal interprets as a control: no C0 or
// C1 control character, no DEL, no escape sequence.
func Clean(s string, width int) string {
	out := escape(s)
	if width > 0 && ansi.StringWidth(out) > width {
		out = ansi.Truncate(out, width, Ellipsis)
	}
	return out
}

// escape replaces unsafe runes with visible escapes.
func escape(s string) string {
	if isSafe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteRune(utf8.RuneError)
		case unsafeRune(r):
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default: // a tag character
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Unsafe reports whether r must not reach a terminal as it is (Clean
// escapes it): a control character (C0, DEL, C1), a bidirectional
// formatting character, a line or paragraph separator, or an invisible
// character (a zero-width space or joiner, a soft hyphen, a tag character…).
// Ids, holder labels and reasons may not contain any (data.Validate*,
// lease.safe_text).
func Unsafe(r rune) bool { return unsafeRune(r) }

// JSON returns the JSON text b with every unsafe rune that encoding/json
// leaves as it is (DEL, the C1 controls, the bidirectional formatting and
// the invisible characters) written as a \u escape (a surrogate pair beyond
// U+FFFF), so JSON output that reaches a terminal
// cannot carry them either; it decodes to the same values. b must be valid
// JSON from encoding/json: its C0 controls are escaped already, and
// everything outside strings is ASCII.
func JSON(b []byte) []byte {
	if isSafe(string(b)) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if unsafeRune(r) && r >= 0x20 {
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError { // beyond U+FFFF: a surrogate pair
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// isSafe is the fast path: printable ASCII only.
func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// unsafeRune reports whether r must not reach a terminal as it is: C0 and C1
// controls and DEL (unicode.IsControl), the bidirectional formatting
// characters that reorder what follows them, the line and paragraph
// separators some terminals treat as line breaks, and the invisible
// characters (invisible).
func unsafeRune(r rune) bool {
	switch {
	case unicode.IsControl(r):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // arabic letter mark, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // LRE, RLE, PDF, LRO, RLO
		return true
	case r >= 0x2066 && r <= 0x2069: // LRI, RLI, FSI, PDI
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return invisible(r)
}

// invisible reports whether r is a character that shows as nothing, or as
// blank space, in the middle of text, so that two strings that differ only
// by it look the same ("chat-1" and "chat\u200b-1"): the zero-width spaces,
// joiners and word joiner, the soft hyphen, the combining grapheme joiner, the
// byte order mark, the invisible mathematical operators and deprecated format
// characters (U+2060..U+206F), the Hangul fillers, the Khmer inherent vowels,
// the Mongolian vowel separator, the shorthand and musical format controls
// and the tag characters (which can spell hidden ASCII). That is Unicode's
// Default_Ignorable_Code_Point set without the variation selectors (U+FE00..
// U+FE0F, U+E0100.., U+180B..U+180D, U+180F), which emoji and CJK text need
// and which the non-ASCII marks of ids (Mark) show.
func invisible(r rune) bool {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x180e:
		return true
	case r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x206f:
		return true
	case r == 0x3164, r == 0xfeff, r == 0xffa0:
		return true
	case r >= 0x1bca0 && r <= 0x1bca3, r >= 0x1d173 && r <= 0x1d17a, r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return false
}
