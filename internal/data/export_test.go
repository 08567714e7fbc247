package data

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// Poll mode's reads, for the EXPLAIN test.
var (
	PollSQL     = pollQuery(false)
	PollGapsSQL = pollQuery(true)
)

// The reads by id and by session, for the partition plans' test.
const (
	EventsSinceSQL = eventsSinceSQL
	EventsForSQL   = eventsForSQL
)

// SetAfterCommit makes s call f once an acquire's or a release's
// transaction has committed, before its notification is sent (see
// sqlcall.Options.AfterCommit): the notifier-dies test stops its child there.
func SetAfterCommit(s *Store, f func()) { s.afterCommit = f }

// Pooled reports whether s found a pooler between it and PostgreSQL when it
// opened, and so uses the query mode that keeps no prepared statement past
// its transaction.
func Pooled(s *Store) bool {
	return s.pool.Config().ConnConfig.DefaultQueryExecMode == pooledMode
}

// CreatedByFiles is what migrate's check for foreign objects reads the
// files to create: functions as name and argument types (dropped: the
// signatures the files drop), relations, types and triggers ("name table").
func CreatedByFiles() (funcs, funcArgs, dropped, relations, types, triggers []string) {
	c := createdByFiles()
	return c.Funcs, c.FuncArgs, c.Dropped, c.Relations, c.Types, c.Triggers
}

// RenewTicket calls lease.renew_ticket, which only the queue's tests call
// (a waiting run keeps its ticket by calling Enqueue again): it extends
// runID's live ticket to now + ttl and returns its place; ErrNotHeld when runID has no live ticket on key (it expired, was
// cancelled, or was granted the lease). It never revives a ticket.
func (s *Store) RenewTicket(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration) (Place, error) {
	if err := ValidateKey(key); err != nil {
		return Place{}, err
	}
	if err := ValidateTTL(ttl); err != nil {
		return Place{}, err
	}
	p, ok, err := s.place(ctx, sqlcall.RenewTicket, key.Account, key.Session, runID, ttl)
	if err != nil {
		return Place{}, fmt.Errorf("renew ticket %s: %w", key, queueError(err))
	}
	if !ok {
		return Place{}, ErrNotHeld
	}
	return p, nil
}
