package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestPreemptCancelsTheHolder: a Preempt from another Client (its own
// connections) takes a live lease at once with a higher fence; the
// preempted Lease's Context is cancelled with a *LostError that is
// ErrPreempted and whose text names the preemptor's label, public run id
// and reason; its fenced writes are refused.
func TestPreemptCancelsTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	key := lease.Key{Account: "acme", Session: "chat-1"}
	desktop := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	phone := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	held := acquire(t, desktop, permit(t, desktop, key, "desktop"))

	p, err := phone.Preempt(ctx, permit(t, phone, key, "phone"), "user moved to the phone")
	if err != nil {
		t.Fatalf("Preempt of a live holder: %v", err)
	}
	defer p.Release(ctx)
	if p.Fence() <= held.Fence() {
		t.Errorf("preemptor's fence %d, want above the holder's %d", p.Fence(), held.Fence())
	}
	cause := waitDone(t, held, time.Minute)
	var lost *lease.LostError
	if !errors.As(cause, &lost) || !errors.Is(cause, lease.ErrPreempted) || !errors.Is(cause, lease.ErrLost) {
		t.Fatalf("holder's cause = %v, want a *LostError with ErrPreempted", cause)
	}
	for _, want := range []string{p.RunID().String(), `"phone"`, `"user moved to the phone"`, "preempted"} {
		if !strings.Contains(cause.Error(), want) {
			t.Errorf("cause %q does not name %s", cause, want)
		}
	}
	if strings.Contains(cause.Error(), "renewal rejected") || !errors.Is(cause, lease.ErrRejected) {
		t.Errorf("cause %q: want it to say preempted, not that a renewal was rejected, and to be ErrRejected still", cause)
	}
	if lost.By.Kind != data.KindPreempted || lost.By.RunID != p.RunID() || lost.By.PrevHolder != "desktop" {
		t.Errorf("cause's event = %+v, want preempted by %v of desktop", lost.By, p.RunID())
	}
	// Its fenced writes are refused: by FencedTx, which knows the lease is
	// lost, and by the server's fence check, for a writer that carries the
	// old token without asking the Lease. Only the preemptor's lands.
	pool := db.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE doc (body text, fence bigint)`); err != nil {
		t.Fatal(err)
	}
	insert := func(ctx context.Context, tx pgx.Tx, body string, fence int64) error {
		_, err := tx.Exec(ctx, `INSERT INTO doc VALUES ($1, $2)`, body, fence)
		return err
	}
	ran := false
	err = held.FencedTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		ran = true
		return insert(ctx, tx, "preempted, FencedTx", held.Fence())
	})
	if !errors.Is(err, lease.ErrStale) || !errors.Is(err, lease.ErrPreempted) {
		t.Errorf("the preempted holder's FencedTx = %v (fn ran: %v), want ErrStale with ErrPreempted", err, ran)
	}
	tok := held.Token()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tok.Check(ctx, tx); err != nil {
			return err
		}
		return insert(ctx, tx, "preempted, own check", tok.Fence)
	})
	if !errors.Is(err, lease.ErrStale) {
		t.Errorf("the preempted holder's token checked by the server = %v, want ErrStale", err)
	}
	if err := p.FencedTx(ctx, pool, func(ctx context.Context, tx pgx.Tx) error {
		return insert(ctx, tx, "preemptor", p.Fence())
	}); err != nil {
		t.Errorf("the preemptor's FencedTx = %v", err)
	}
	rows, _ := pool.Query(ctx, `SELECT body FROM doc ORDER BY body`)
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || strings.Join(bodies, ",") != "preemptor" {
		t.Errorf("doc = %q, %v; want only the preemptor's write", bodies, err)
	}

	if err := held.Release(ctx); err != nil {
		t.Errorf("Release after the loss = %v, want nil (nothing of the run's is left to delete)", err)
	}
	if h := holderOf(t, db.Store(t), key); h.RunID != p.RunID() {
		t.Errorf("holder after the preempted run's Release = %v, want the preemptor %v", h.RunID, p.RunID())
	}
}

// TestPreemptRefusedForNotPreemptibleHolder: a holder that declared itself
// not preemptible keeps its lease; Preempt says so (ErrNotPreemptible and
// ErrHeld, with the holder's label, attachment and Preemptible false), and
// a plain Try's refusal shows the same fields.
func TestPreemptRefusedForNotPreemptibleHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	key := lease.Key{Account: "acme", Session: "pay"}
	desktop := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	phone := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	pd, err := desktop.AuthorizeRequest(ctx, allowAll, lease.Request{Key: key, Holder: "checkout", NotPreemptible: true, Attachment: "pay-1"})
	if err != nil {
		t.Fatal(err)
	}
	held := acquire(t, desktop, pd)
	pp := permit(t, phone, key, "phone")
	_, err = phone.Preempt(ctx, pp, "impatient")
	var he *lease.HeldError
	if !errors.Is(err, lease.ErrNotPreemptible) || !errors.Is(err, lease.ErrHeld) || !errors.As(err, &he) {
		t.Fatalf("Preempt of a not-preemptible holder = %v, want ErrNotPreemptible and ErrHeld", err)
	}
	if he.Holder != "checkout" || he.Preemptible || he.Attachment != "pay-1" || he.RunID != held.RunID() {
		t.Errorf("HeldError = %+v, want checkout's run, not preemptible, attachment pay-1", he)
	}
	if err := held.SetAttachment(ctx, "pay-2"); err != nil {
		t.Fatalf("SetAttachment: %v", err)
	}
	if held.Attachment() != "pay-2" {
		t.Errorf("Attachment() = %q, want pay-2", held.Attachment())
	}
	_, err = phone.Try(ctx, pp)
	if !errors.As(err, &he) || he.Preemptible || he.Attachment != "pay-2" {
		t.Errorf("Try's refusal = %v (%+v), want not preemptible, attachment pay-2", err, he)
	}
	if err := held.Err(); err != nil {
		t.Errorf("the not-preemptible holder's lease ended: %v", err)
	}
	if err := held.SetAttachment(ctx, "a\u202eb"); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("SetAttachment with a bidi override = %v, want ErrInvalid", err)
	}
	if _, err := desktop.AuthorizeRequest(ctx, allowAll, lease.Request{Key: key, Attachment: "x\x1b[2Jy"}); !errors.Is(err, data.ErrInvalid) {
		t.Errorf("AuthorizeRequest with an escape in the attachment = %v, want ErrInvalid", err)
	}
}
