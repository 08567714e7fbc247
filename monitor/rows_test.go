package monitor

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// TestRowsAgreeWithSortingCopies checks Rows, which keeps its key order
// between calls and merges in only the leases added since, against sorting
// and filtering full copies of the leases, through rounds of acquires,
// takeovers, releases and renewals, for every order and a few filters.
func TestRowsAgreeWithSortingCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := NewState(Config{})
	base := time.Unix(1_700_000_000, 0)
	var fence int64
	acquire := func(k data.Key) {
		fence++
		at := base.Add(time.Duration(rng.IntN(50)) * time.Second) // ties, broken by key
		s.ApplyEvent(data.Event{ID: fence, Kind: data.KindAcquired, Key: k, RunID: uuid.New(), Fence: fence,
			Holder: fmt.Sprintf("Dev-%d", rng.IntN(9)), At: at, ExpiresAt: at.Add(time.Duration(rng.IntN(40)) * time.Second)}, base)
	}
	filters := []string{"", "ACCT-1", "s1", "dev-3", "zz", "-4", "É"}
	for round := range 12 {
		for range 200 {
			k := data.Key{Account: fmt.Sprintf("acct-%d", rng.IntN(20)), Session: fmt.Sprintf("%c%d", "sSé"[rng.IntN(3)], rng.IntN(100))}
			if rng.IntN(4) == 0 {
				if l, ok := s.Lease(k); ok {
					fence++
					s.ApplyEvent(data.Event{ID: fence, Kind: data.KindReleased, Key: k, RunID: l.RunID, Fence: l.Fence}, base)
				}
				continue
			}
			acquire(k)
		}
		all := s.Leases()
		if round == 11 && len(all) < 1024 {
			t.Fatalf("%d leases: too few for a filter to work out every slot's match at once (rowFilter.prepare)", len(all))
		}
		for _, order := range []Order{OrderTTL, OrderAccount, OrderHeld, OrderHolder} {
			for _, f := range filters {
				var want []data.Key
				for _, l := range sortedCopy(all, order) {
					if naiveMatch(l, f) {
						want = append(want, l.Key)
					}
				}
				var got []data.Key
				for _, r := range s.Rows(nil, RowQuery{Order: order, Filter: f}) {
					k, ok := s.RowKey(r)
					if !ok {
						t.Fatalf("round %d: Rows listed a lease that is gone", round)
					}
					got = append(got, k.Key)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("round %d order %d filter %q:\n got %v\nwant %v", round, order, f, got, want)
				}
				// Filtering the unfiltered listing (an erased or changed
				// filter) lists what a new listing with the filter does.
				unfiltered := s.Rows(nil, RowQuery{Order: order})
				if filtered := s.Filter(nil, unfiltered, f); !slices.Equal(filtered, s.Rows(nil, RowQuery{Order: order, Filter: f})) {
					t.Fatalf("round %d order %d: the unfiltered listing filtered by %q lists %d rows, want %d", round, order, f, len(filtered), len(want))
				}
				// Narrowing the unfiltered listing, or this one, by a longer
				// filter lists what a new listing with it does.
				for _, from := range []string{"", f} {
					longer := f + "1"
					narrowed := s.Narrow(s.Rows(nil, RowQuery{Order: order, Filter: from}), longer)
					fresh := s.Rows(nil, RowQuery{Order: order, Filter: longer})
					if !slices.Equal(narrowed, fresh) {
						t.Fatalf("round %d order %d: %q narrowed to %q lists %d rows, a new listing %d", round, order, from, longer, len(narrowed), len(fresh))
					}
				}
			}
		}
	}
}

// TestRowsKeepTheHeldOrder lists the held rows first, in their order, even
// after their leases changed, and new leases after them.
func TestRowsKeepTheHeldOrder(t *testing.T) {
	s := NewState(Config{})
	base := time.Unix(1_700_000_000, 0)
	for i := range 5 {
		s.ApplyEvent(data.Event{ID: int64(i + 1), Kind: data.KindAcquired, Key: data.Key{Account: "a", Session: fmt.Sprint(i)},
			RunID: uuid.New(), Fence: int64(i + 1), At: base, ExpiresAt: base.Add(time.Duration(10-i) * time.Second)}, base)
	}
	held := s.Rows(nil, RowQuery{Order: OrderTTL}) // 4, 3, 2, 1, 0
	l, _ := s.Lease(data.Key{Account: "a", Session: "4"})
	s.ApplyEvent(data.Event{ID: 6, Kind: data.KindReleased, Key: l.Key, RunID: l.RunID, Fence: l.Fence}, base)
	s.ApplyEvent(data.Event{ID: 7, Kind: data.KindAcquired, Key: data.Key{Account: "a", Session: "new"},
		RunID: uuid.New(), Fence: 7, At: base, ExpiresAt: base}, base)
	var got []string
	for _, r := range s.Rows(nil, RowQuery{Order: OrderTTL, Held: held}) {
		k, _ := s.RowKey(r)
		got = append(got, k.Session)
	}
	if want := []string{"3", "2", "1", "0", "new"}; !slices.Equal(got, want) {
		t.Errorf("held rows %v, want %v", got, want)
	}
}

func sortedCopy(all []data.Lease, order Order) []data.Lease {
	out := slices.Clone(all)
	byKey := func(a, b data.Lease) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session))
	}
	slices.SortFunc(out, func(a, b data.Lease) int {
		switch order {
		case OrderTTL:
			return cmp.Or(a.ExpiresAt.Compare(b.ExpiresAt), byKey(a, b))
		case OrderHeld:
			return cmp.Or(a.AcquiredAt.Compare(b.AcquiredAt), byKey(a, b))
		case OrderHolder:
			return cmp.Or(cmp.Compare(a.Holder, b.Holder), byKey(a, b))
		}
		return byKey(a, b)
	})
	return out
}

func naiveMatch(l data.Lease, filter string) bool {
	f := strings.ToLower(filter)
	for _, s := range []string{l.Account, l.Session, l.Holder, l.RunID.String()} {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}
