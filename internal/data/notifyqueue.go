package data

import (
	"context"
	"fmt"
)

// NotifyQueueUsage returns pg_notification_queue_usage(): the fraction of
// PostgreSQL's NOTIFY queue (8 GB, shared by every database of the server)
// that holds notifications some listener has not read yet. At 1 every
// transaction that sends a NOTIFY fails at its commit (SQLSTATE 54000). A
// listener that stays in a transaction holds the queue's tail, and any role
// that may connect can be one.
func (s *Store) NotifyQueueUsage(ctx context.Context) (float64, error) {
	var u float64
	if err := s.pool.QueryRow(ctx, `SELECT pg_catalog.pg_notification_queue_usage()`).Scan(&u); err != nil {
		return 0, fmt.Errorf("read the NOTIFY queue's usage: %w", translate(err))
	}
	return u, nil
}
