package leasetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/lease"
)

// Asker is a run that asked a lease's holder to hand over (AskHandOver),
// as another device would.
type Asker struct {
	store *data.Store
	key   lease.Key
	label string
	run   uuid.UUID // its own (secret) run id
	// Ask is the ask as recorded: its public run id, label and deadline.
	Ask data.PendingAsk
}

// AskHandOver records an ask to hand key's lease over, from a fresh run
// labelled label, pending for timeout: the holder's lease.Lease.Asked
// delivers it, and a test checks how the program answers (Outcome). app is
// a store whose role may ask (lease_app). It fails the test when the ask
// is not recorded (nobody holds key, or another ask is pending).
func AskHandOver(t testing.TB, app *data.Store, key lease.Key, label string, timeout time.Duration) *Asker {
	t.Helper()
	a := &Asker{store: app, key: key, label: label, run: uuid.New()}
	ans, err := app.AskHandover(context.Background(), key, a.run, timeout, label)
	switch {
	case err != nil:
		t.Fatalf("leasetest.AskHandOver: %v", err)
	case ans.Outcome != data.AskAsked:
		t.Fatalf("leasetest.AskHandOver: the ask on %s was not recorded: %s", key, ans.Outcome)
	}
	a.Ask = ans.Ask
	return a
}

// RunID is the asker's public run id: the one Ask.RunID and the events show.
func (a *Asker) RunID() uuid.UUID { return a.Ask.RunID }

// Outcome asks again, which writes nothing, and returns where the ask is:
// data.AskPending, data.AskHandedOver, data.AskDeclined or data.AskExpired
// (data.AskFree when the holder let the lease go).
func (a *Asker) Outcome(t testing.TB) data.AskOutcome {
	t.Helper()
	ans, err := a.store.AskHandover(context.Background(), a.key, a.run, time.Minute, a.label)
	if err != nil {
		t.Fatalf("leasetest.Asker.Outcome: %v", err)
	}
	return ans.Outcome
}

// WaitOutcome polls Outcome until the ask is no longer pending, failing the
// test after timeout, and returns it.
func (a *Asker) WaitOutcome(t testing.TB, timeout time.Duration) data.AskOutcome {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if o := a.Outcome(t); o != data.AskPending {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("leasetest.Asker.WaitOutcome: the ask on %s still pending after %s", a.key, timeout)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}
