package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/leasetop/leasetop/internal/termtext"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestJSONOutputIsInert: ls --json and events --json of a lease and an event
// whose text carries what encoding/json leaves raw (DEL, a C1 CSI, a
// right-to-left override; put there past the CHECKs, as only the owner can)
// print it as \u escapes, and decode to the same text.
func TestJSONOutputIsInert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	conn := db.Conn(t)
	insertHostileRow(t, conn) // holder "h\u009b31m\u202eabc"
	const reason = "del\x7f csi\u009b31m rlo\u202eabc"
	if _, err := conn.Exec(ctx, `INSERT INTO lease.event (at, kind, account_id, session_id, run_id, reason)
		VALUES (clock_timestamp(), 'force_released', 'acme', 'x', gen_random_uuid(), $1)`, reason); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args  []string
		field func([]byte) (string, error)
		want  string
	}{
		{[]string{"ls", "--json"}, func(b []byte) (string, error) {
			var v struct {
				Leases []struct{ Holder string } `json:"leases"`
			}
			err := json.Unmarshal(b, &v)
			if err != nil || len(v.Leases) != 1 {
				return "", err
			}
			return v.Leases[0].Holder, nil
		}, "h\u009b31m\u202eabc"},
		{[]string{"events", "--json"}, func(b []byte) (string, error) {
			lines := bytes.Split(bytes.TrimSpace(b), []byte("\n")) // one event a line: the hostile row's acquired, then this
			var v struct{ Reason string }
			err := json.Unmarshal(lines[len(lines)-1], &v)
			return v.Reason, err
		}, reason},
	} {
		out, errOut, code := leasetop(ctx, db.URL, tt.args...)
		if code != 0 {
			t.Fatalf("%v: code %d err %q", tt.args, code, errOut)
		}
		for _, r := range out {
			if termtext.Unsafe(r) && r != '\n' {
				t.Errorf("%v prints %U raw:\n%q", tt.args, r, out)
			}
		}
		if got, err := tt.field([]byte(out)); err != nil || got != tt.want {
			t.Errorf("%v decodes to %q (%v), want %q", tt.args, got, err, tt.want)
		}
	}
}
