package data_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestMaintainCannotBeBlockedFromOutside: maintain_events
// ran one at a time on the advisory lock hashtext('lease.maintain_events'),
// which any role that may connect can take and keep; then every maintain
// failed after its lock_timeout, naming nobody, and partitions stopped being
// made ahead. Now a CONNECT-only login holding that lock changes nothing,
// and what keeps a second maintain out is a running one, which the error
// names in one line: its pid, login role and application_name, and how
// long its transaction has been open.
func TestMaintainCannotBeBlockedFromOutside(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	adminDSN, adminRole := pgtest.Login(t, db, "lease_admin")
	s := pgtest.OpenStore(t, adminDSN, data.Options{})

	connectOnly, _ := pgtest.Login(t, db, "")
	squatter := connect(t, connectOnly)
	if _, err := squatter.Exec(ctx, `SELECT pg_advisory_lock(hashtext('lease.maintain_events'))`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MaintainEvents(ctx, data.MaintainOptions{}); err != nil {
		t.Fatalf("MaintainEvents while a CONNECT-only login holds the old advisory lock: %v", err)
	}

	// A maintenance in progress: the same login, from cron, its
	// transaction left open.
	cfg, err := pgx.ParseConfig(adminDSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "nightly maintain"
	running, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close(ctx)
	tx, err := running.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's end
	if _, err := tx.Exec(ctx, `SELECT * FROM lease.maintain_events(NULL, 7)`); err != nil {
		t.Fatalf("the first maintenance: %v", err)
	}
	pid := int(running.PgConn().PID())

	_, err = s.MaintainEvents(ctx, data.MaintainOptions{})
	var busy *data.MaintainBusyError
	if !errors.As(err, &busy) {
		t.Fatalf("MaintainEvents while another runs = %v, want a *MaintainBusyError", err)
	}
	h := busy.Holder
	if h.PID != pid || h.User != adminRole || h.App != "nightly maintain" || !h.Visible || h.InTx <= 0 {
		t.Errorf("holder %+v, want pid %d, role %s, application nightly maintain, its transaction's age", h, pid, adminRole)
	}
	msg := err.Error()
	for _, want := range []string{fmt.Sprintf("pid %d", pid), adminRole, `"nightly maintain"`, "open for", "pg_terminate_backend"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line", msg)
	}

	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MaintainEvents(ctx, data.MaintainOptions{}); err != nil {
		t.Fatalf("MaintainEvents once the other ended: %v", err)
	}
}

// connect opens a connection to dsn, closed when t ends.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}
