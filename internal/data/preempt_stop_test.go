package data_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/testkit/pgtest"
)

// TestPreemptedRunSaysItStopped: after a preempt the preemptor sees the
// preempted run's work pending until that run, with its own secret id,
// says it stopped; a stranger's word (another run id) changes nothing, a
// repeat is no news, and a preempt of a free key waits for nobody. The
// preempted run is a lease_app login; the preemptor a login in lease_app
// and lease_preempt; a lease_reader may do neither.
func TestPreemptedRunSaysItStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.New(t)
	appDSN, _ := pgtest.Login(t, db, "lease_app")
	victimS := pgtest.OpenStore(t, appDSN, data.Options{})
	preDSN, preLogin := pgtest.Login(t, db, "lease_app")
	if _, err := db.Conn(t).Exec(ctx, "GRANT lease_preempt TO "+pgx.Identifier{preLogin}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	preS := pgtest.OpenStore(t, preDSN, data.Options{})
	k := data.Key{Account: "acme", Session: "s1"}
	victim, preemptor := uuid.New(), uuid.New()
	mustAcquire(t, victimS, k, victim, time.Hour)
	if _, err := preS.Preempt(ctx, k, preemptor, time.Hour, "phone", "moved", data.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	pending := func(want bool, when string) {
		t.Helper()
		if got, err := preS.PreemptPending(ctx, k, preemptor); err != nil || got != want {
			t.Fatalf("%s: PreemptPending = %v, %v; want %v", when, got, err, want)
		}
	}
	pending(true, "after the preempt")
	if news, err := victimS.PreemptStopped(ctx, k, uuid.New()); err != nil || news {
		t.Fatalf("PreemptStopped by another run id = %v, %v; want false", news, err)
	}
	if news, err := victimS.PreemptStopped(ctx, k, data.PublicRunID(victim)); err != nil || news {
		t.Fatalf("PreemptStopped with the victim's public id = %v, %v; want false (it takes the secret id)", news, err)
	}
	pending(true, "after words from others")
	readerDSN, _ := pgtest.Login(t, db, "lease_reader")
	reader := pgtest.OpenStore(t, readerDSN, data.Options{})
	if _, err := reader.PreemptStopped(ctx, k, victim); !isDenied(err) {
		t.Errorf("PreemptStopped as lease_reader: err = %v, want permission denied", err)
	}
	if _, err := reader.PreemptPending(ctx, k, preemptor); !isDenied(err) {
		t.Errorf("PreemptPending as lease_reader: err = %v, want permission denied", err)
	}
	if news, err := victimS.PreemptStopped(ctx, k, victim); err != nil || !news {
		t.Fatalf("PreemptStopped by the victim = %v, %v; want true", news, err)
	}
	pending(false, "after the victim's word")
	if news, err := victimS.PreemptStopped(ctx, k, victim); err != nil || news {
		t.Fatalf("PreemptStopped again = %v, %v; want false", news, err)
	}

	free := data.Key{Account: "acme", Session: "free"}
	nobody := uuid.New()
	if _, err := preS.Preempt(ctx, free, nobody, time.Hour, "phone", "moved", data.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := preS.PreemptPending(ctx, free, nobody); err != nil || got {
		t.Fatalf("PreemptPending after preempting a free key = %v, %v; want false", got, err)
	}
}
