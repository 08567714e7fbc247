package data

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// PartitionChange is one thing lease.maintain_events did to the history's
// partitions.
type PartitionChange struct {
	// Action is "moved" (rows that had landed in the DEFAULT partition went
	// to a new partition of their day), "created" (a partition made ahead),
	// "dropped" (a day older than the retention, detached and dropped) or
	// "busy" (a drop that could not get its lock at once, left to the next
	// run).
	Action string
	// Partition is the partition's qualified name.
	Partition string
	// From and Until bound the partition's times (From zero for the first
	// partition, which an upgrade made of the whole older history).
	From, Until time.Time
	// Rows is how many rows were moved ("moved"), else 0.
	Rows int64
	// Bytes is the size a drop freed ("dropped"), else 0.
	Bytes int64
}

// MaintainOptions says what MaintainEvents keeps.
type MaintainOptions struct {
	// Keep, when positive, drops every partition whose days all lie more
	// than Keep before the database clock. Zero drops nothing.
	Keep time.Duration
	// Ahead is how many days after today get a partition. Zero means 7.
	Ahead int
	// Progress, when set, is told four times a second what the server
	// process running lease.maintain_events does (a lock it waits for, an
	// index it builds), read on a connection of its own, from another
	// goroutine.
	Progress func(Activity)
}

// defaultAhead is how many days ahead MaintainEvents makes partitions: a week
// of runs missed before a transition's row lands in the DEFAULT partition.
const defaultAhead = 7

// MaintainEvents calls lease.maintain_events (sql/partition.sql), which needs
// lease_admin: it moves what landed in the DEFAULT partition, makes the
// partitions ahead, and drops whole days older than opts.Keep. Run it daily
// or more often (`leasetop maintain` from cron). While another maintenance
// runs it does nothing and returns a *MaintainBusyError naming it.
func (s *Store) MaintainEvents(ctx context.Context, opts MaintainOptions) ([]PartitionChange, error) {
	if opts.Keep < 0 {
		return nil, &InputError{Field: "keep", Problem: "must not be negative"}
	}
	if opts.Ahead < 0 || opts.Ahead > 366 {
		return nil, &InputError{Field: "ahead", Problem: "must be between 0 and 366 days"}
	}
	ahead := opts.Ahead
	if ahead == 0 {
		ahead = defaultAhead
	}
	var keep *time.Duration
	if opts.Keep > 0 {
		keep = &opts.Keep
	}
	var q Querier = s.Pinned()
	if opts.Progress != nil {
		// One connection of the pool, so that its backend can be watched:
		// the call runs there in a pinned transaction (Pinned.On).
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, fmt.Errorf("maintain events: %w", translate(err))
		}
		defer c.Release()
		wctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { watchActivity(wctx, s.pool.Config().ConnConfig, c.Conn().PgConn().PID(), opts.Progress) })
		q = s.Pinned().On(c)
	}
	rows, err := q.Query(ctx, `SELECT action, part, lo, hi, coalesce(n_rows, 0), coalesce(bytes, 0)
		FROM lease.maintain_events($1, $2)`, keep, ahead)
	if err == nil {
		var out []PartitionChange
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (PartitionChange, error) {
			var c PartitionChange
			var from *time.Time
			err := r.Scan(&c.Action, &c.Partition, &from, &c.Until, &c.Rows, &c.Bytes)
			c.From = deref(from)
			return c, err
		})
		if err == nil {
			return out, nil
		}
	}
	if isMaintenanceBusy(err) {
		return nil, s.maintainBusy(ctx)
	}
	return nil, fmt.Errorf("maintain events: %w", translate(err))
}
