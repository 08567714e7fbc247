package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/leasetop/leasetop/internal/data"
)

// A notification not sent after its commit is one line on stderr, its
// untrusted parts escaped.
func TestPrintNotifyErrorIsOneCleanLine(t *testing.T) {
	var b strings.Builder
	err := &data.NotifyError{Key: data.Key{Account: "acme", Session: "chat-1"}, Err: errors.New("conn closed\n\x1b[2Jby the server")}
	printNotifyError(&b)(err)
	got := b.String()
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
		t.Errorf("printed %q, want one line", got)
	}
	if strings.ContainsRune(got, '\x1b') {
		t.Errorf("printed %q, want the escape escaped", got)
	}
	for _, want := range []string{"leasetop: notify acme/chat-1 after its commit", "conn closed", "catch up"} {
		if !strings.Contains(got, want) {
			t.Errorf("printed %q, want it to contain %q", got, want)
		}
	}
}
