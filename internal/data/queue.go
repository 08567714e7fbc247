package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// ErrQueueFull: the session's queue holds as many live tickets as it may
// (QueueLimit), or the caller's login holds its share of them
// (ErrQueueShareFull); nothing was written.
var ErrQueueFull = errors.New("the session's queue is full")

// ErrQueueShareFull: the caller's login (its session_user) holds QueueShare
// live tickets of the session's queue already, the most one login may;
// nothing was written. errors.Is(err, ErrQueueFull) holds for it too.
var ErrQueueShareFull = fmt.Errorf("%w for this login", ErrQueueFull)

// ErrTicketCleared: an operator cleared the run's ticket from the session's
// queue (Store.ClearTicket, ClearQueue): the run must stop waiting. Its
// enqueue and renewal are refused, nothing written, until a ticket TTL
// after the ticket would have expired; a new run may queue again.
var ErrTicketCleared = errors.New("an operator cleared this run's ticket from the queue")

// TicketClearedError is the ErrTicketCleared of a run whose ticket an
// operator cleared: Message is the server's line, naming the run's public
// id, the queue, the operator's login and reason (untrusted text).
type TicketClearedError struct {
	Message string
}

func (e *TicketClearedError) Error() string { return e.Message }

// Is makes errors.Is(err, ErrTicketCleared) true.
func (e *TicketClearedError) Is(target error) bool { return target == ErrTicketCleared }

// QueueLimit is the most live tickets a session's queue holds
// (lease.queue_limit).
const QueueLimit = 64

// QueueShare is the most live tickets one login may hold in a session's
// queue (lease.queue_share): half of QueueLimit, so that no login can fill
// a queue and shut every other login out of it.
const QueueShare = QueueLimit / 2

// Place is a ticket's place in its session's queue, on the database clock
// when it was read.
type Place struct {
	// Ahead is the number of live tickets before this one: 0 for the head.
	Ahead int
	// ExpiresAt is the ticket's expiry. Zero when Enqueue took no ticket:
	// the key is free and has no queue, or the run holds the lease.
	ExpiresAt time.Time
	// AheadExpiresAt is the earliest expiry among the tickets ahead: if
	// their runs stop renewing, this one moves up then. Zero when none.
	AheadExpiresAt time.Time
}

// Ticketed reports whether the run holds a ticket.
func (p Place) Ticketed() bool { return !p.ExpiresAt.IsZero() }

// Ticket is one live ticket of a session's queue (lease.queue_ticket).
type Ticket struct {
	Key
	ID        int64     // orders the queue
	RunID     uuid.UUID // the waiter's public run id (PublicRunID)
	Holder    string
	Login     string // the login (session_user) that took it; "" before schema version 6
	JoinedAt  time.Time
	RenewedAt time.Time
	ExpiresAt time.Time
}

// Enqueue takes runID's ticket in key's queue for ttl, labelled holder, or
// renews it if it lives, and returns its place. runID is the run's secret
// id, the one it will acquire with: while the queue has a live ticket, only
// the head ticket's run may acquire the free lease, and its grant ends its
// ticket. A ticket whose run stops renewing expires and is skipped; once it
// has expired, Enqueue joins the tail again. When the key is free and has
// no queue, or runID holds the lease, it takes no ticket and returns a Place
// with zero ExpiresAt: acquire. A full queue returns ErrQueueFull, a login
// that holds its share of it ErrQueueShareFull, a run whose ticket an
// operator cleared ErrTicketCleared. Enqueue, RenewTicket and a grant of
// the lease end the session's expired tickets, each with its queue_left
// event.
func (s *Store) Enqueue(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration, holder string) (Place, error) {
	if err := validateAcquire(key, runID, ttl, holder); err != nil {
		return Place{}, err
	}
	p, _, err := s.place(ctx, sqlcall.Enqueue, key.Account, key.Session, runID, ttl, holder)
	if err != nil {
		return Place{}, fmt.Errorf("enqueue %s: %w", key, queueError(err))
	}
	return p, nil
}

// place runs a call that returns a lease.queue_place; ok is false when it
// returned NULL.
func (s *Store) place(ctx context.Context, query string, args ...any) (Place, bool, error) {
	var (
		ahead    *int32
		exp, aex *time.Time
	)
	err := s.pool.QueryRow(ctx, query, sqlcall.Secret(s.calls.Mode, args...)...).Scan(&ahead, &exp, &aex)
	if err != nil {
		return Place{}, false, err
	}
	if ahead == nil {
		return Place{}, false, nil
	}
	p := Place{Ahead: int(*ahead)}
	if exp != nil {
		p.ExpiresAt = *exp
	}
	if aex != nil {
		p.AheadExpiresAt = *aex
	}
	return p, true, nil
}

// CancelTicket ends runID's ticket on key at once, and reports whether it
// had one: the next waiter moves up and is notified (a queue_left event).
func (s *Store) CancelTicket(ctx context.Context, key Key, runID uuid.UUID) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	var ok bool
	err := s.pool.QueryRow(ctx, sqlcall.CancelTicket,
		sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID)...).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("cancel ticket %s: %w", key, translate(err))
	}
	return ok, nil
}

// QueueOf returns key's live tickets, head first. A lease_reader may call
// it: tickets show public run ids only.
func (s *Store) QueueOf(ctx context.Context, key Key) ([]Ticket, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	rows, err := s.Pinned().Query(ctx, `
		SELECT id, run_id, holder, login, joined_at, renewed_at, expires_at
		  FROM lease.queue_ticket
		 WHERE account_id = $1 AND session_id = $2 AND expires_at > clock_timestamp()
		 ORDER BY id`, key.Account, key.Session)
	if err != nil {
		return nil, fmt.Errorf("read queue %s: %w", key, translate(err))
	}
	defer rows.Close()
	var out []Ticket
	for rows.Next() {
		t := Ticket{Key: key}
		if err := rows.Scan(&t.ID, &t.RunID, &t.Holder, &t.Login, &t.JoinedAt, &t.RenewedAt, &t.ExpiresAt); err != nil {
			return nil, fmt.Errorf("read queue %s: %w", key, translate(err))
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read queue %s: %w", key, translate(err))
	}
	return out, nil
}

// QueueLengths returns the number of live tickets of every session that has
// a queue: one read for ls and the monitor.
func (s *Store) QueueLengths(ctx context.Context) (map[Key]int, error) {
	rows, err := s.Pinned().Query(ctx, `
		SELECT account_id, session_id, count(*)
		  FROM lease.queue_ticket
		 WHERE expires_at > clock_timestamp()
		 GROUP BY account_id, session_id`)
	if err != nil {
		return nil, fmt.Errorf("read queues: %w", translate(err))
	}
	defer rows.Close()
	out := map[Key]int{}
	for rows.Next() {
		var (
			k Key
			n int64
		)
		if err := rows.Scan(&k.Account, &k.Session, &n); err != nil {
			return nil, fmt.Errorf("read queues: %w", translate(err))
		}
		out[k] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read queues: %w", translate(err))
	}
	return out, nil
}

// heldQuery reads the holder of a key ($1, $2), whether it may be
// preempted, its attachment, the live tickets of its queue ahead of the run
// whose public id is $3 (all of them when it has no live ticket), and the
// ask to hand over pending on it (addressed to this holder), for HeldError:
// every strategy's part of the refusal in one read.
const heldQuery = `
	SELECT l.run_id, l.holder, l.fence, greatest(l.expires_at - n.now, interval '0'),
	       l.preemptible, l.attachment,
	       (SELECT count(*)::integer FROM lease.queue_ticket q
	         WHERE q.account_id = $1 AND q.session_id = $2 AND q.expires_at > n.now
	           AND q.id < coalesce((SELECT m.id FROM lease.queue_ticket m
	                                 WHERE m.account_id = $1 AND m.session_id = $2
	                                   AND m.run_id = $3 AND m.expires_at > n.now),
	                               9223372036854775807)),
	       a.asker_run_id, a.asker, a.holder_run_id, a.until_at, greatest(a.until_at - n.now, interval '0')
	  FROM (SELECT clock_timestamp() AS now) n
	  LEFT JOIN lease.session_lease l ON l.account_id = $1 AND l.session_id = $2
	  LEFT JOIN lease.handover_ask a ON a.account_id = $1 AND a.session_id = $2
	        AND a.state = 'pending' AND a.until_at > n.now
	        AND (l.run_id IS NULL OR a.holder_run_id = l.run_id)`

// QueueStats sums up every session's queue on the database clock: the live
// tickets, the sessions with a queue, the longest queue, and how long the
// longest-waiting live ticket has waited (0 when none). One read; a
// lease_reader may call it.
type QueueStats struct {
	Tickets, Sessions, Longest int
	OldestWait                 time.Duration
}

// QueueStats reads the QueueStats.
func (s *Store) QueueStats(ctx context.Context) (QueueStats, error) {
	var (
		st      QueueStats
		oldest  *time.Duration
		longest *int32
	)
	err := s.Pinned().QueryRow(ctx, `
		SELECT coalesce(sum(n), 0)::integer, count(*)::integer, max(n)::integer, max(waited)
		  FROM (SELECT count(*) AS n, clock_timestamp() - min(joined_at) AS waited
		          FROM lease.queue_ticket
		         WHERE expires_at > clock_timestamp()
		         GROUP BY account_id, session_id) q`).Scan(&st.Tickets, &st.Sessions, &longest, &oldest)
	if err != nil {
		return QueueStats{}, fmt.Errorf("read queues: %w", translate(err))
	}
	if longest != nil {
		st.Longest = int(*longest)
	}
	if oldest != nil {
		st.OldestWait = max(*oldest, 0)
	}
	return st, nil
}
