package data

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// MaxPoolBytes bounds a pool's name (AcquireOptions.Pool, SetLimit).
const MaxPoolBytes = 128

// MaxSlots bounds a limit (SetLimit).
const MaxSlots = 100000

// ErrAtLimit: the run's account, or its pool, has as many live runs as its
// limit allows (sql/limits.sql); nothing was granted. The error is a
// *LimitError naming the runs that hold the slots; it also matches ErrHeld,
// so code that waits, queues or gives up on a held session does the same for
// a full account.
var ErrAtLimit = errors.New("account at its limit of live runs")

// ValidatePool checks a pool's name: "" (no pool), or at most MaxPoolBytes
// with the rules of holder labels.
func ValidatePool(pool string) error { return validateText("pool", pool, 0, MaxPoolBytes) }

// SlotHolder is a run holding one slot of a limit.
type SlotHolder struct {
	Slot      int
	Session   string
	RunID     uuid.UUID // public run id
	Holder    string
	Remaining time.Duration
}

// LimitError is the ErrAtLimit returned by an acquire: the limit that is
// full and the runs holding its slots, on the database clock when it was
// read.
type LimitError struct {
	Key     Key
	Pool    string // "" the account's own limit
	Slots   int
	Holders []SlotHolder
	// Queued counts the account's runs queued for a slot of the pool before
	// this one (sql/queue.sql, the account's queue): the next freed slots
	// go to them first, so a run may be refused while slots are free.
	Queued int
}

func (e *LimitError) Error() string { return e.Describe(verbatim, strconv.Quote) }

// Describe words the refusal in one line, as HeldError.Describe does: the
// limit and who holds its slots until when. Database texts go through text
// (ids) and quote (labels).
func (e *LimitError) Describe(text, quote func(string) string) string {
	var b strings.Builder
	what := "account " + text(e.Key.Account)
	if e.Pool != "" {
		what = "pool " + quote(e.Pool) + " of account " + text(e.Key.Account)
	}
	fmt.Fprintf(&b, "%s is at its limit of %d live runs", what, e.Slots)
	if e.Queued > 0 {
		fmt.Fprintf(&b, " or its free slots go to %d runs queued before this one", e.Queued)
	}
	for i, h := range e.Holders {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		if i == 3 {
			fmt.Fprintf(&b, "and %d more", len(e.Holders)-3)
			break
		}
		fmt.Fprintf(&b, "session %s run %s (%s) for %s more", text(h.Session), h.RunID, quote(h.Holder),
			h.Remaining.Round(100*time.Millisecond))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrAtLimit) and errors.Is(err, ErrHeld) true.
func (e *LimitError) Is(target error) bool { return target == ErrAtLimit || target == ErrHeld }

// limitHoldersQuery reads, for account $1 and the limits that apply to pool
// $2, each limit and the live runs holding its slots, fullest first.
const limitHoldersQuery = `
	SELECT a.pool, a.slots, s.slot, s.session_id, l.run_id, l.holder,
	       greatest(l.expires_at - n.now, interval '0')
	  FROM (SELECT clock_timestamp() AS now) n
	  JOIN lease.account_limit a ON a.account_id = $1 AND a.pool IN ('', $2)
	  LEFT JOIN lease.limit_slot s ON s.account_id = a.account_id AND s.pool = a.pool
	  LEFT JOIN lease.session_lease l ON l.account_id = s.account_id AND l.session_id = s.session_id
	       AND l.expires_at > n.now AND (a.pool = '' OR l.pool = a.pool)
	 ORDER BY a.pool DESC, s.slot`

// slotQueuedQuery counts the live tickets of account $1 that wait for a slot
// of pool $2 ahead of run $3's ticket on session $4 (every one, when it has
// none): the runs the account's queue grants before it.
const slotQueuedQuery = `
	SELECT count(*)::integer
	  FROM (SELECT clock_timestamp() AS now) n
	  JOIN lease.queue_ticket q ON q.account_id = $1 AND q.pool = $2 AND q.for_slot
	       AND q.expires_at > n.now AND q.run_id <> $3
	 WHERE q.id < coalesce((SELECT m.id FROM lease.queue_ticket m
	                         WHERE m.account_id = $1 AND m.session_id = $4 AND m.run_id = $3
	                           AND m.expires_at > n.now), 9223372036854775807)`

// atLimit reads why an acquire of key in pool by run pub (public id) that
// found no live holder of its session was refused: a *LimitError when a
// limit of its account that applies is full, or when runs queued for its
// slots before it take the free ones; nil otherwise (the session was taken
// and released meanwhile, or its queue holds it). ok is false when the read
// failed.
func (s *Store) atLimit(ctx context.Context, key Key, pub uuid.UUID, pool string) (e *LimitError, ok bool) {
	var queued int32
	if err := s.Pinned().QueryRow(ctx, slotQueuedQuery, key.Account, pool, pub, key.Session).Scan(&queued); err != nil {
		return nil, false
	}
	rows, err := s.Pinned().Query(ctx, limitHoldersQuery, key.Account, pool)
	if err != nil {
		return nil, false
	}
	byPool := map[string]*LimitError{}
	var order []string
	for rows.Next() {
		var (
			p         string
			slots     int32
			slot      *int32
			session   *string
			run       *uuid.UUID
			holder    *string
			remaining *time.Duration
		)
		if err := rows.Scan(&p, &slots, &slot, &session, &run, &holder, &remaining); err != nil {
			rows.Close()
			return nil, false
		}
		e := byPool[p]
		if e == nil {
			e = &LimitError{Key: key, Pool: p, Slots: int(slots)}
			byPool[p] = e
			order = append(order, p)
		}
		if run != nil {
			e.Holders = append(e.Holders, SlotHolder{Slot: int(*slot), Session: *session, RunID: *run,
				Holder: *holder, Remaining: *remaining})
		}
	}
	if rows.Err() != nil {
		return nil, false
	}
	for _, p := range order {
		if e := byPool[p]; len(e.Holders) >= e.Slots {
			e.Queued = int(queued)
			return e, true
		}
	}
	if queued > 0 && len(order) > 0 {
		e := byPool[order[0]] // the pool's own limit when it has one
		e.Queued = int(queued)
		return e, true
	}
	return nil, true
}

// refused is the error of an acquire of key in pool that granted nothing:
// the *HeldError naming the session's holder, or, when the session had no
// live holder and no queue ahead, the *LimitError of its account's full
// limit. stale is true when the refusal's cause was gone by the time it was
// read: the session free, nothing queued ahead and no limit full (a holder's
// lease, or a slot's, expired between the call and the read); the call may
// be made again.
func (s *Store) refused(ctx context.Context, key Key, runID uuid.UUID, pool string) (err error, stale bool) {
	h, ok := s.held(ctx, key, runID)
	if !ok || (h.RunID != uuid.Nil && h.Remaining > 0) || h.Queued > 0 {
		return h, false
	}
	e, ok := s.atLimit(ctx, key, PublicRunID(runID), pool)
	if e != nil {
		return e, false
	}
	return h, ok
}

// SetLimit makes account's limit (pool "": the whole account; a pool name:
// the runs declared in that pool) slots live runs (lease.set_limit, role
// lease_admin), and returns how many live runs hold its slots now. A limit
// below the live runs revokes none: the account is granted nothing more
// until fewer than slots are live. Recorded as a limit_set event with the
// login as actor.
func (s *Store) SetLimit(ctx context.Context, account, pool string, slots int) (int, error) {
	if err := validateText("account", account, 1, MaxIDBytes); err != nil {
		return 0, err
	}
	if err := ValidatePool(pool); err != nil {
		return 0, err
	}
	if slots < 0 || slots > MaxSlots {
		return 0, &InputError{Field: "slots", Problem: "must be 0 to " + strconv.Itoa(MaxSlots)}
	}
	var n int32
	if err := s.pool.QueryRow(ctx, sqlcall.SetLimit, account, pool, slots).Scan(&n); err != nil {
		return 0, fmt.Errorf("set limit of %s: %w", account, translate(err))
	}
	return int(n), nil
}

// RemoveLimit removes account's limit for pool ("" the account's own;
// lease.remove_limit, role lease_admin) and reports whether there was one.
// Recorded as a limit_removed event.
func (s *Store) RemoveLimit(ctx context.Context, account, pool string) (bool, error) {
	if err := validateText("account", account, 1, MaxIDBytes); err != nil {
		return false, err
	}
	if err := ValidatePool(pool); err != nil {
		return false, err
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, sqlcall.RemoveLimit, account, pool).Scan(&ok); err != nil {
		return false, fmt.Errorf("remove limit of %s: %w", account, translate(err))
	}
	return ok, nil
}

// LimitUsage is one limit and its use, on the database clock: for the CLI's
// limit ls, the monitor and the exporter.
type LimitUsage struct {
	Account string
	Pool    string // "" the account's own limit
	Slots   int
	Used    int // live runs holding its slots (above Slots after a lowered limit)
	// Queued counts the live queue tickets in the account's sessions (of
	// the pool's sessions' leases, for a pool: all of the account's).
	Queued  int
	SetAt   time.Time
	SetBy   string
	Holders []SlotHolder // oldest grant first
}

// Saturation is how full the limit is: Used/Slots, 1 when its slots are
// all held, above 1 while a lowered limit's live runs above it finish. A
// limit of 0 slots, which lets no run start, is 1.
func (u LimitUsage) Saturation() float64 {
	if u.Slots == 0 {
		return 1
	}
	return float64(u.Used) / float64(u.Slots)
}

// SortBySaturation sorts use fullest first (Saturation), then by the most
// queued tickets, then by account and pool, so that the order is stable
// between reads.
func SortBySaturation(use []LimitUsage) {
	slices.SortStableFunc(use, func(a, b LimitUsage) int {
		return cmp.Or(cmp.Compare(b.Saturation(), a.Saturation()), cmp.Compare(b.Queued, a.Queued),
			strings.Compare(a.Account, b.Account), strings.Compare(a.Pool, b.Pool))
	})
}

// limitsQuery reads every limit with its live slot holders ($1 ”: every
// account).
const limitsQuery = `
	SELECT a.account_id, a.pool, a.slots, a.set_at, a.set_by,
	       (SELECT count(*)::integer FROM lease.queue_ticket q
	         WHERE q.account_id = a.account_id AND q.expires_at > n.now),
	       h.slot, h.session_id, h.run_id, h.holder, h.remaining
	  FROM (SELECT clock_timestamp() AS now) n
	  JOIN lease.account_limit a ON $1 = '' OR a.account_id = $1
	  LEFT JOIN LATERAL (
	       SELECT s.slot, s.session_id, l.run_id, l.holder, l.acquired_at,
	              greatest(l.expires_at - n.now, interval '0') AS remaining
	         FROM lease.limit_slot s
	         JOIN lease.session_lease l ON l.account_id = s.account_id AND l.session_id = s.session_id
	          AND l.expires_at > n.now AND (a.pool = '' OR l.pool = a.pool)
	        WHERE s.account_id = a.account_id AND s.pool = a.pool) h ON true
	 ORDER BY a.account_id, a.pool, h.acquired_at, h.slot`

// Limits returns every limit (account "") or account's, with its use. A
// lease_reader may call it.
func (s *Store) Limits(ctx context.Context, account string) ([]LimitUsage, error) {
	rows, err := s.Pinned().Query(ctx, limitsQuery, account)
	if err != nil {
		return nil, fmt.Errorf("read limits: %w", translate(err))
	}
	var out []LimitUsage
	for rows.Next() {
		var (
			u         LimitUsage
			slots     int32
			queued    int32
			slot      *int32
			session   *string
			run       *uuid.UUID
			holder    *string
			remaining *time.Duration
		)
		if err := rows.Scan(&u.Account, &u.Pool, &slots, &u.SetAt, &u.SetBy, &queued,
			&slot, &session, &run, &holder, &remaining); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read limits: %w", translate(err))
		}
		if n := len(out); n == 0 || out[n-1].Account != u.Account || out[n-1].Pool != u.Pool {
			u.Slots, u.Queued = int(slots), int(queued)
			out = append(out, u)
		}
		if run != nil {
			last := &out[len(out)-1]
			last.Holders = append(last.Holders, SlotHolder{Slot: int(*slot), Session: *session, RunID: *run,
				Holder: *holder, Remaining: *remaining})
			last.Used++
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read limits: %w", translate(err))
	}
	return out, nil
}
