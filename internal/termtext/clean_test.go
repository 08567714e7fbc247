package termtext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

func TestClean(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		width int
		want  string
	}{
		{"plain", "acct-1", 0, "acct-1"},
		{"clear screen", "s\x1b[2Jx", 0, `s\x1b[2Jx`},
		{"osc title", "\x1b]0;pwned\x07", 0, `\x1b]0;pwned\x07`},
		{"c1 csi", "a\u009b31mb", 0, `a\x9b31mb`},
		{"newline and tab", "a\nb\tc\r", 0, `a\x0ab\x09c\x0d`},
		{"del", "a\x7f", 0, `a\x7f`},
		{"bidi override", "abc\u202edcba", 0, `abc\u202edcba`},
		{"invalid utf8", "a\xffb", 0, "a\uFFFDb"},
		{"zero-width space", "chat\u200b-1", 0, `chat\u200b-1`},
		{"soft hyphen", "chat\u00ad-1", 0, `chat\xad-1`},
		{"byte order mark", "\ufeffchat-1", 0, `\ufeffchat-1`},
		{"word joiner and cgj", "a\u2060b\u034fc", 0, `a\u2060b\u034fc`},
		{"hangul filler", "a\u3164b", 0, `a\u3164b`},
		{"tag characters", "a\U000e0041b", 0, `a\U000e0041b`},
		{"variation selector kept", "❤\ufe0f", 0, "❤\ufe0f"},
		{"unicode kept", "café 日本", 0, "café 日本"},
		{"fits", "abcdef", 6, "abcdef"},
		{"truncated", "abcdefgh", 6, "abcde…"},
		{"wide truncated", "日本語テキスト", 7, "日本語…"},
		{"escape counted in width", "\x1b[2J", 5, `\x1b…`},
		{"width one", "abc", 1, "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Clean(tt.in, tt.width); got != tt.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
			}
		})
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "acct", "\x1b[2J", "\x1b]8;;http://x\x07link\x1b]8;;\x07", "\u009b1;1H",
		"日本語", "e\u0301", "👩‍👩‍👧", "\xff\xfe", "a\u202eb", strings.Repeat("x", 600)} {
		f.Add(s, 0)
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, width int) {
		width %= 200
		got := Clean(s, width)
		if !utf8.ValidString(got) {
			t.Fatalf("Clean(%q, %d) = %q: invalid UTF-8", s, width, got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unsafeRune(r) {
				t.Fatalf("Clean(%q, %d) = %q: contains %U", s, width, got, r)
			}
		}
		if width > 0 {
			if w := ansi.StringWidth(got); w > width {
				t.Fatalf("Clean(%q, %d) = %q: width %d", s, width, got, w)
			}
		}
		if ansi.Strip(got) != got {
			t.Fatalf("Clean(%q, %d) = %q: ansi.Strip changes it", s, width, got)
		}
	})
}
