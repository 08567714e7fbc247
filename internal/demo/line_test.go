package demo

import "testing"

// TestLineSentence: a status bar gets the chaos line's action first, then
// the rest; a line whose tag is not an action reads as its text.
func TestLineSentence(t *testing.T) {
	tests := []struct{ tag, text, want string }{
		{"CHAOS kill -9", "phone pid 16663, which holds globex/chat-2 with fence 85", "kill -9 phone pid 16663, which holds globex/chat-2 with fence 85"},
		{"CHAOS SIGSTOP", "phone pid 16663 for 6s", "SIGSTOP phone pid 16663 for 6s"},
		{"CHAOS", "kill -9 phone pid 16663 failed: no such process", "kill -9 phone pid 16663 failed: no such process"},
	}
	for _, tt := range tests {
		if got := (Line{Tag: tt.tag, Text: tt.text}).Sentence(); got != tt.want {
			t.Errorf("Line{Tag: %q}.Sentence() = %q, want %q", tt.tag, got, tt.want)
		}
	}
}
