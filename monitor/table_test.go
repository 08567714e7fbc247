package monitor

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// TestLeaseTableAgreesWithAMap drives the compact table and a plain map
// through the same random puts and removes (few accounts, few sessions, so
// keys collide, come back and share probe runs) and checks every key after
// each step: the backward-shift delete must never lose a key that probed
// past a hole, and interned texts must survive their last user leaving.
func TestLeaseTableAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tab leaseTable
	tab.reset(0)
	want := map[data.Key]data.Lease{}
	base := time.Unix(1_700_000_000, 0)
	for step := range 20000 {
		k := data.Key{Account: fmt.Sprintf("a%d", rng.IntN(7)), Session: fmt.Sprintf("s%d", rng.IntN(300))}
		if rng.IntN(3) == 0 {
			if i, ok := tab.find(0, k); ok {
				tab.remove(i)
			}
			delete(want, k)
		} else {
			l := data.Lease{Key: k, RunID: uuid.New(), Holder: fmt.Sprintf("h%d", rng.IntN(50)), Fence: int64(step),
				AcquiredAt: base, RenewedAt: base.Add(time.Duration(step)), ExpiresAt: base.Add(time.Hour),
				NotPreemptible: rng.IntN(2) == 0, Attachment: fmt.Sprintf("att%d", rng.IntN(3))}
			tab.put(l)
			want[k] = l
		}
		if tab.live != len(want) || tab.index.n != len(want) {
			t.Fatalf("step %d: table holds %d (index %d), want %d", step, tab.live, tab.index.n, len(want))
		}
		if step%97 != 0 {
			continue
		}
		for k, w := range want {
			i, ok := tab.find(0, k)
			if !ok {
				t.Fatalf("step %d: %v lost", step, k)
			}
			got := tab.lease(i)
			if got.Key != w.Key || got.RunID != w.RunID || got.Holder != w.Holder || got.Fence != w.Fence ||
				!got.RenewedAt.Equal(w.RenewedAt) || !got.ExpiresAt.Equal(w.ExpiresAt) || !got.AcquiredAt.Equal(w.AcquiredAt) ||
				got.NotPreemptible != w.NotPreemptible || got.Attachment != w.Attachment {
				t.Fatalf("step %d: %v is %+v, want %+v", step, k, got, w)
			}
		}
	}
	if n, a := tab.strs.count(), tab.accts.count(); n > 50+3 || a > 7 {
		t.Errorf("%d interned texts and %d accounts, want at most %d and %d: released ones are not reused", n, a, 50+3, 7)
	}
}

// TestLeaseTableZeroTime keeps the zero time zero (its UnixNano is not
// defined).
func TestLeaseTableZeroTime(t *testing.T) {
	var tab leaseTable
	tab.reset(1)
	tab.put(data.Lease{Key: data.Key{Account: "a", Session: "s"}})
	i, _ := tab.find(0, data.Key{Account: "a", Session: "s"})
	if l := tab.lease(i); !l.AcquiredAt.IsZero() || !l.ExpiresAt.IsZero() {
		t.Errorf("zero times came back as %v, %v", l.AcquiredAt, l.ExpiresAt)
	}
}
