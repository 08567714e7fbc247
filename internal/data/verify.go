package data

import (
	"context"
	"fmt"
)

// EventsByID returns the event rows with these ids, in id order; an id with
// no row is left out. A notification's payload is only a claim (anyone who
// can connect may NOTIFY on lease_events), so a consumer that must not be
// fooled reads back the rows its notifications name (Listener.ReadBack
// does, with this read).
//
// It is one statement on the store's pool, not a pinned transaction (BEGIN,
// the pin, the read, COMMIT): a read-back lies on every waiter's way from a
// release to its next try. So eventsByIDSQL names every operator and type
// it resolves with its schema, and resolves nothing planted whatever the
// session's search_path.
func (s *Store) EventsByID(ctx context.Context, ids []int64) ([]Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return readEvents(ctx, s.pool, eventsByIDSQL, ids)
}

// eventsByIDSQL is EventsByID's read.
const eventsByIDSQL = `SELECT ` + eventColumns + ` FROM lease.event
	 WHERE id OPERATOR(pg_catalog.=) ANY ($1::pg_catalog.int8[])
	 ORDER BY id`

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
