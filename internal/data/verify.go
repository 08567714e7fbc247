package data

import (
	"context"
	"fmt"
)

// EventsByID returns the event rows with these ids, in id order; an id with
// no row is left out. A notification's payload is only a claim (anyone who
// can connect may NOTIFY on lease_events), so a consumer that must not be
// fooled reads back the rows its notifications name.
func (s *Store) EventsByID(ctx context.Context, ids []int64) ([]Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.events(ctx, `SELECT `+eventColumns+` FROM lease.event WHERE id = ANY($1) ORDER BY id`, ids)
}

// LeasesFor reads the leases of keys with the server clock, as a Snapshot
// holding only those that exist: the read-back of renewal notifications.
func (s *Store) LeasesFor(ctx context.Context, keys []Key) (Snapshot, error) {
	accounts := make([]string, len(keys))
	sessions := make([]string, len(keys))
	for i, k := range keys {
		accounts[i], sessions[i] = k.Account, k.Session
	}
	snap, err := readSnapshot(ctx, s.Pinned(), `
		SELECT `+serverColumns+`, `+leaseColumns+`
		  FROM `+serverNow+` n
		  LEFT JOIN lease.session_lease l
		    ON (l.account_id, l.session_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
		accounts, sessions)
	if err != nil {
		return Snapshot{}, fmt.Errorf("read %d leases: %w", len(keys), err)
	}
	return snap, nil
}
