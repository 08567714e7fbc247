package data

import (
	"context"
	"fmt"
	"time"
)

// Pages is a range of the lease table's heap pages, [From, To); To < 0 runs
// to the end of the table, however it grows.
type Pages struct {
	From, To int64
}

// lastPage is past every heap page: PostgreSQL numbers blocks below
// 0xFFFFFFFF.
const lastPage = 0xFFFFFFFF

// ChangedIn is Changed of the leases whose rows lie in pages: a TID range
// scan (PostgreSQL 14+) reads those pages alone, so a reader that walks the
// table a slice at a time pays for the whole table once a pass instead of
// once a read. A row a renewal moves to another page is found there, by the
// read of that page's slice after the renewal.
func (s *Store) ChangedIn(ctx context.Context, since time.Time, pages Pages) (Snapshot, error) {
	to := pages.To
	if to < 0 {
		to = lastPage
	}
	return readSnapshot(ctx, s.Pinned(), `
		SELECT `+serverColumns+`, `+leaseColumns+`
		  FROM `+serverNow+` n
		  LEFT JOIN lease.session_lease l
		    ON l.ctid >= ('(' || $2::bigint || ',0)')::pg_catalog.tid
		   AND l.ctid < ('(' || $3::bigint || ',0)')::pg_catalog.tid
		   AND l.renewed_at > $1`, since, pages.From, to)
}

// LeasePages is the lease table's size in heap pages now (its relation's
// size, which grows before its rows are visible).
func (s *Store) LeasePages(ctx context.Context) (int64, error) {
	var n int64
	err := s.Pinned().QueryRow(ctx, `
		SELECT pg_catalog.pg_relation_size('lease.session_lease'::pg_catalog.regclass)
		       / pg_catalog.current_setting('block_size')::int`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read the lease table's size: %w", translate(err))
	}
	return n, nil
}
