package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/data"
	"github.com/leasetop/leasetop/internal/pgtest"
)

// TestQueueColumnAndDetail: the QUEUE column appears once a session has a
// queue (and not before), with its length, and the detail view lists the
// tickets in order with their labels and how long they have waited; the
// events pane says what a queue_joined is.
func TestQueueColumnAndDetail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	s := db.Store(t)
	k := data.Key{Account: "acme", Session: "chat-queue"}
	if _, err := s.Acquire(ctx, k, uuid.New(), time.Minute, "desktop"); err != nil {
		t.Fatal(err)
	}
	d := liveModel(t, s, true, 120, 30)
	d.waitScreen("chat-queue")
	if strings.Contains(screen(d.m), "QUEUE") {
		t.Fatalf("a QUEUE column with no queue anywhere:\n%s", screen(d.m))
	}
	for _, label := range []string{"phone", "tablet"} {
		if _, err := s.Enqueue(ctx, k, uuid.New(), time.Minute, label); err != nil {
			t.Fatal(err)
		}
	}
	d.waitFor("the QUEUE column with 2", func(m *Model) bool {
		out := screen(m)
		if !strings.Contains(out, "QUEUE") {
			return false
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "chat-queue") && strings.HasSuffix(strings.TrimRight(line, " "), " 2") {
				return true
			}
		}
		return false
	})
	d.waitScreen("took a ticket") // the events pane names the queue's events
	d.selectSession(k)
	d.press("enter")
	d.waitScreen(" 2. tablet") // the queue is read when the view opens
	out := screen(d.m)
	phone, tablet := strings.Index(out, " 1. phone"), strings.Index(out, " 2. tablet")
	if phone < 0 || tablet < phone || !strings.Contains(out, "2 waiting") || !strings.Contains(out, "waiting ") {
		t.Fatalf("the detail view does not list the queue in order with wait times:\n%s", out)
	}
}
