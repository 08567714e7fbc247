package termtext

import (
	"testing"
	"unicode/utf8"
)

func TestMark(t *testing.T) {
	tests := []struct{ in, want string }{
		{"chat-1", "chat-1"},
		{"ch\u0430t-1", `ch\u{430}t-1`}, // Cyrillic а
		{"chat-\u0661", `chat-\u{661}`}, // Arabic-Indic one
		{"café", `caf\u{e9}`},           // precomposed
		{"cafe\u0301", `cafe\u{301}`},   // combining acute
		{"phone pid 16663", "phone pid 16663"},
		{"a\\b", `a\\b`},                  // a backslash
		{`ch\u{430}t-1`, `ch\\u{430}t-1`}, // an id spelling the escape in ASCII
		{"a\x1b[2J", `a\x1b[2J`},          // unsafe: as Clean
		{"chat\u200b-1", `chat\u200b-1`},  // invisible: as Clean
		{"😀", `\u{1f600}`},
	}
	for _, tt := range tests {
		if got := Mark(tt.in, 0); got != tt.want {
			t.Errorf("Mark(%+q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Mark("ch\u0430t-1-and-more", 8); got != `ch\u{43…` {
		t.Errorf("Mark(.., 8) = %q, want it cut to 8 cells", got)
	}
}

// TestMarkTellsApart: strings that differ print differently, whichever
// characters make the difference, including ones that spell what another's
// escape prints.
func TestMarkTellsApart(t *testing.T) {
	set := []string{"chat-1", "chаt-1", "сhat-1", "chat-１", "chat‐1", "chat-1\u0301", `ch\u{430}t-1`, `ch\\u{430}t-1`,
		"chat\x1b-1", `chat\x1b-1`, "chat\u200b-1", `chat\u200b-1`, "a\\", "a\\\\"}
	seen := map[string]string{}
	for _, s := range set {
		if !utf8.ValidString(s) {
			t.Fatalf("%+q is not UTF-8", s)
		}
		m := Mark(s, 0)
		if other, ok := seen[m]; ok {
			t.Errorf("Mark(%+q) = Mark(%+q) = %q", s, other, m)
		}
		seen[m] = s
		if HasNonASCII(m) {
			t.Errorf("Mark(%+q) = %q has a rune outside ASCII", s, m)
		}
	}
}

// TestQuote: a label for a line a user reads is quoted, its look-alikes,
// combining marks, bidirectional controls, backslashes and quotes escaped,
// so the result is ASCII and tells every two labels apart.
func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"phone", `"phone"`},
		{"ph\u03bfne", `"ph\u{3bf}ne"`},
		{"a\u0301\u0301", `"a\u{301}\u{301}"`},
		{"pay\u202e1", `"pay\u202e1"`},
		{`say "hi"`, `"say \"hi\""`},
		{`back\slash`, `"back\\slash"`},
		{"", `""`},
	}
	for _, tc := range tests {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%+q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
