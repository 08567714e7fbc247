package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasetop/leasetop/internal/testkit/pgtest"
	"github.com/leasetop/leasetop/lease"
)

// TestDoHandOverIsNotALoss: a function run by Do that hands its lease over
// in answer to an ask has not lost it: Do returns nil (fn's own result),
// not an error that is ErrLost or ErrHandedOver, and the asker holds the
// lease.
func TestDoHandOverIsNotALoss(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx := context.Background()
	holderC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	askerC := newClient(t, db.Store(t), lease.Config{TTL: 3 * time.Second})
	started := make(chan struct{})
	var done <-chan askResult
	err := holderC.Do(ctx, permit(t, holderC, testKey, "desktop"), lease.BusyRefuse, func(ctx context.Context, l *lease.Lease) error {
		asks := l.Asked()
		close(started)
		done = askAsync(context.Background(), askerC, permit(t, askerC, testKey, "phone"), 30*time.Second, lease.BusyRefuse)
		select {
		case <-asks:
		case <-time.After(30 * time.Second):
			return errors.New("no ask delivered within 30s")
		}
		if err := l.HandOver(ctx); err != nil {
			return err
		}
		<-ctx.Done() // the hand-over ends fn's context: the work stops, as it would for a loss
		return ctx.Err()
	})
	<-started
	if err != nil {
		t.Fatalf("Do after a hand-over = %v (ErrLost %v, ErrHandedOver %v), want nil",
			err, errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrHandedOver))
	}
	if r := result(t, done); r.err != nil {
		t.Fatalf("the asker's Ask: %v", r.err)
	}
}

// TestStateString: each status of a lease's State reads as one line that
// says it, with what goes with it.
func TestStateString(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 8, 0, 30, 0, 0, time.UTC)
	lost := &lease.LostError{Key: testKey, Fence: 7, Reason: lease.ErrPreempted}
	tests := []struct {
		st   lease.State
		want []string
	}{
		{lease.State{Status: lease.Held, Deadline: at, ExpiresAt: at}, []string{"held, safe until ", "expires 00:30:00.000Z"}},
		{lease.State{Status: lease.AtRisk, Since: at, Err: errors.New("timeout"), Deadline: at, ExpiresAt: at}, []string{"at risk since ", "(timeout)", "safe until"}},
		{lease.State{Status: lease.Lost, Err: lost}, []string{"lost: ", "fence 7 lost: preempted"}},
		{lease.State{Status: lease.Released, Err: lease.ErrReleased}, []string{"released"}},
	}
	for _, tc := range tests {
		got := tc.st.String()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("State{%v}.String() = %q, want it to contain %q", tc.st.Status, got, w)
			}
		}
		if strings.Contains(got, "{") || strings.Contains(got, "\n") {
			t.Errorf("State{%v}.String() = %q, want one line of words", tc.st.Status, got)
		}
	}
}
