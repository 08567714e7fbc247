package monitor

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/data"
)

// bigState returns a State holding n leases that a resync brought, and the
// leases: 100 accounts, 50 holder labels, acquired and renewed within a
// second of base (lease i at i%997 ms), each for a minute.
func bigState(n int, base time.Time) (*State, []data.Lease) {
	leases := make([]data.Lease, n)
	for i := range leases {
		at := base.Add(time.Duration(i%997) * time.Millisecond)
		leases[i] = data.Lease{Key: data.Key{Account: fmt.Sprintf("acct-%03d", i%100), Session: fmt.Sprintf("sess-%06d", i)},
			RunID: uuid.New(), Holder: fmt.Sprintf("dev-%d", i%50), Fence: int64(i + 1),
			AcquiredAt: at, RenewedAt: at, ExpiresAt: at.Add(time.Minute)}
	}
	s := NewState(Config{})
	s.ApplySync(data.Sync{Snapshot: data.Snapshot{Leases: leases}}, base)
	return s, leases
}
