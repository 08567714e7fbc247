package termtext

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONEscapesWhatEncodingJSONLeaves(t *testing.T) {
	values := []string{
		"plain", "a\x7fb", "csi \u009b31m", "all C1 \u0080\u0085\u009f", "rlo \u202eabc",
		"isolates \u2066\u2069", "marks \u200e\u200f\u061c", "separators \u2028\u2029",
		"C0 \x1b[2J\x07\n", "kept: café 日本 😀 \ufe0f", "invalid \xff",
		"invisible ch\u200bat\u00ad-1\ufeff\u034f", "tags \U000e0041\U000e007f", "emoji 👩\u200d👧",
	}
	for _, v := range values {
		raw, err := json.Marshal(map[string]string{"v": v})
		if err != nil {
			t.Fatal(err)
		}
		out := JSON(raw)
		for _, r := range string(out) {
			if Unsafe(r) {
				t.Errorf("JSON(%q) = %q keeps %U raw", raw, out, r)
			}
		}
		var back map[string]string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("JSON(%q) = %q is not JSON: %v", raw, out, err)
		}
		want := strings.ToValidUTF8(v, "\uFFFD")
		if back["v"] != want {
			t.Errorf("JSON(%q) decodes to %q, want %q", raw, back["v"], want)
		}
	}
	if out := JSON([]byte(`{"v":"a\u009bb"}`)); string(out) != `{"v":"a\u009bb"}` {
		t.Errorf("JSON of escaped text = %s, want it unchanged", out)
	}
	if out := JSON([]byte("{\"v\":\"x\u202ey\"}")); string(out) != `{"v":"x\u202ey"}` {
		t.Errorf("JSON = %s, want U+202E as \\u202e", out)
	}
}
