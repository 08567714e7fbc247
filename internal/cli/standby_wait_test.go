package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/cli"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestWaitingModesRefuseOnStandby: on a hot standby, `run --on-busy
// wait|queue|ask` is refused with the usual read-only line (exit 1), as
// refuse and preempt are, instead of retrying the read-only error for ever;
// the command never runs.
func TestWaitingModesRefuseOnStandby(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	standby := pgtest.Standby(t)
	if _, err := db.Conn(t).Exec(ctx, `SELECT * FROM lease.acquire('acme', 'chat', $1, '1 hour', 'desktop')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitReplayed(t, standby)
	on := db.On(t, standby)
	for _, mode := range []string{"wait", "queue", "ask"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, time.Minute) // a run that waits for ever fails here
			defer cancel()
			out, errOut, code := leasetop(ctx, on, "run", "--account", "acme", "--session", "chat", "--on-busy", mode, "--", "sh", "-c", "echo ran")
			if code != cli.ExitFailure || !strings.Contains(errOut, "the server is read-only (a hot standby?): writes need the primary") || strings.Count(errOut, "\n") != 1 || out != "" {
				t.Errorf("run --on-busy %s on the standby: exit %d, stdout %q, stderr %q; want 1 and one read-only line", mode, code, out, errOut)
			}
		})
	}
}
