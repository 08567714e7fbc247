package faults_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestQueuesAndAsksOnStandby: on a hot standby, as a lease_reader, the
// read-only tools show a session's queue and the ask pending on its lease:
// `ls --json` (queue_length, queues, pending_ask) and the monitor's detail
// view (the tickets in order, who asked and until when). Joining the queue
// or asking there is refused with the read-only line
// (internal/cli's TestWaitingModesRefuseOnStandby).
func TestQueuesAndAsksOnStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	key := data.Key{Account: "acme", Session: "chat"}
	if _, err := s.Acquire(ctx, key, uuid.New(), time.Hour, "desktop"); err != nil {
		t.Fatal(err)
	}
	// The ask first: an ask may not jump a queue, but one made before the
	// tickets keeps its place.
	asker := uuid.New()
	if a, err := s.AskHandover(ctx, key, asker, time.Hour, "laptop"); err != nil || a.Outcome != data.AskAsked {
		t.Fatalf("AskHandover = %+v, %v; want asked", a, err)
	}
	for _, label := range []string{"phone", "tablet"} {
		if _, err := s.Enqueue(ctx, key, uuid.New(), time.Hour, label); err != nil {
			t.Fatal(err)
		}
	}
	reader, _ := pgtest.Login(t, db, "lease_reader")
	standby := pgtest.Standby(t)
	pgtest.WaitReplayed(t, standby)
	onStandby := pgtest.DB{URL: reader}.On(t, standby)

	out, err := exec.Command(leasetopBin, "ls", "--json", "--dsn", onStandby).Output()
	if err != nil {
		t.Fatalf("ls --json on the standby: %v", err)
	}
	var ls struct {
		Leases []struct {
			QueueLength int `json:"queue_length"`
			PendingAsk  *struct {
				RunID  string `json:"run_id"`
				Holder string `json:"holder"`
			} `json:"pending_ask"`
		} `json:"leases"`
		Queues []struct {
			SessionID string `json:"session_id"`
			Length    int    `json:"length"`
		} `json:"queues"`
	}
	if err := json.Unmarshal(out, &ls); err != nil {
		t.Fatalf("ls --json: %v\n%s", err, out)
	}
	if len(ls.Leases) != 1 || ls.Leases[0].QueueLength != 2 || ls.Leases[0].PendingAsk == nil ||
		ls.Leases[0].PendingAsk.Holder != "laptop" || ls.Leases[0].PendingAsk.RunID != data.PublicRunID(asker).String() ||
		len(ls.Queues) != 1 || ls.Queues[0].Length != 2 {
		t.Errorf("ls --json on the standby = %s; want the queue of 2 and laptop's ask", out)
	}

	p := openPTY(t, 120, 30)
	w := startWatch(t, p, "--read-only", "--dsn", onStandby)
	pgtest.Eventually(t, 30*time.Second, "the standby's table", func() bool {
		s := p.screen()
		return strings.Contains(s, "[RO]") && strings.Contains(s, "desktop") && strings.Contains(s, "QUEUE")
	})
	p.typeKeys(t, "\r") // the only row is selected: its detail view
	pgtest.Eventually(t, 30*time.Second, "the detail view's queue and ask", func() bool {
		s := p.screen()
		phone, tablet := strings.Index(s, "1. phone"), strings.Index(s, "2. tablet")
		return phone >= 0 && tablet > phone && strings.Contains(s, "2 waiting") &&
			regexp.MustCompile(`asked by +run `+data.PublicRunID(asker).String()+` \(laptop\)`).MatchString(s) &&
			strings.Contains(s, "ask until")
	})
	p.typeKeys(t, "q")
	p.typeKeys(t, "q")
	if code := w.wait(t); code != 0 {
		t.Errorf("leasetop watch exit = %d after q, want 0; screen: %q", code, p.screen())
	}
}
