package data

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/sqlcall"
)

// MaxAskTTL is the longest an ask to hand over may stay pending.
const MaxAskTTL = time.Hour

// PendingAsk is an ask to hand a session's lease over (lease.handover_ask):
// who asked, which holder it was addressed to, and until when.
type PendingAsk struct {
	RunID       uuid.UUID     // the asker's public run id
	Holder      string        // the label the asker would hold the lease under
	HolderRunID uuid.UUID     // the holder asked, by its public run id
	Until       time.Time     // the deadline, on the database clock
	Remaining   time.Duration // Until - now on the database clock, when read (at least 0)
}

// AskOutcome is what lease.ask_handover, hand_over or decline_handover
// answered (sql/handover.sql documents each).
type AskOutcome string

// The outcomes.
const (
	AskAsked      AskOutcome = "asked"       // a new ask was recorded
	AskPending    AskOutcome = "pending"     // this run's ask is pending; nothing written
	AskBusy       AskOutcome = "busy"        // another run's ask is pending: refused
	AskHandedOver AskOutcome = "handed_over" // the lease was handed to the asker
	AskDeclined   AskOutcome = "declined"    // the holder declined
	AskExpired    AskOutcome = "expired"     // the ask passed its deadline (or its holder let go first)
	AskFree       AskOutcome = "free"        // nobody holds the lease: acquire it
	AskHeld       AskOutcome = "held"        // the asker holds the lease itself
	AskNoAsk      AskOutcome = "no_ask"      // no ask is pending for this holder
	AskNotHeld    AskOutcome = "not_held"    // the caller does not hold the lease
	// AskNotPreemptible: the holder declared that it must not be preempted,
	// so it may not be asked either; nothing written.
	AskNotPreemptible AskOutcome = "not_preemptible"
	// AskQueued: the session's queue has live tickets ahead of the asker
	// (AskAnswer.Ahead): an ask may not jump the queue; nothing written.
	AskQueued AskOutcome = "queued"
)

// AskAnswer is the answer of an ask call: its outcome, the ask it concerns
// (zero when none), the fence handed over (AskHandedOver) or held
// (AskHeld, AskNotPreemptible), and the tickets ahead (AskQueued).
type AskAnswer struct {
	Outcome AskOutcome
	Ask     PendingAsk
	Fence   int64
	Ahead   int
}

// AskHandover records runID's ask to whoever holds key's lease, pending for
// ttl (more than 0, at most MaxAskTTL) on the database clock; holder is the
// label runID would hold the lease under. runID is the run's own (secret)
// id: once the holder hands over, Acquire with the same runID returns the
// lease. Asking again with the same runID writes nothing and reports where
// the ask is (AskPending, AskHandedOver, AskDeclined, AskExpired; at or past
// its deadline it is ended as expired, atomically against a hand-over).
// Another run's pending ask is AskBusy, with that ask. A holder that
// declared itself not preemptible cannot be asked (AskNotPreemptible), nor
// can a session whose queue has live tickets ahead of runID (AskQueued, with
// their number): nothing is written. The lease handed over is preemptible
// and has no attachment: AskHandoverWith declares otherwise.
func (s *Store) AskHandover(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration, holder string) (AskAnswer, error) {
	return s.AskHandoverWith(ctx, key, runID, ttl, holder, AcquireOptions{})
}

// AskHandoverWith is AskHandover with what the asker declares about the
// lease it would hold, as AcquireWith takes it: the ask records opt, and the
// hand-over writes it on the lease (the old holder's flag and attachment are
// not kept).
func (s *Store) AskHandoverWith(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration, holder string, opt AcquireOptions) (AskAnswer, error) {
	if err := ValidateKey(key); err != nil {
		return AskAnswer{}, err
	}
	if runID == uuid.Nil {
		return AskAnswer{}, &InputError{Field: "run id", Problem: "must not be the nil UUID"}
	}
	if ttl <= 0 || ttl > MaxAskTTL {
		return AskAnswer{}, &InputError{Field: "ask ttl", Problem: fmt.Sprintf("must be more than 0 and at most %s, got %s", MaxAskTTL, ttl)}
	}
	if err := ValidateHolder(holder); err != nil {
		return AskAnswer{}, err
	}
	if err := opt.validate(); err != nil {
		return AskAnswer{}, err
	}
	a, err := s.askCall(ctx, `SELECT * FROM lease.ask_handover($1, $2, $3, $4, $5, $6, $7)`,
		key.Account, key.Session, runID, ttl, holder, !opt.NotPreemptible, opt.Attachment)
	if err != nil {
		return AskAnswer{}, fmt.Errorf("ask %s to hand over: %w", key, translate(err))
	}
	return a, nil
}

// HandOver moves key's lease from runID, its holder (its own, secret id), to
// the run whose ask is pending for it, in one transaction, with a higher
// fence and an expiry now + ttl: AskHandedOver names the asker and the
// fence. AskExpired (the ask's deadline passed: the lease stays), AskNoAsk
// and AskNotHeld change nothing.
func (s *Store) HandOver(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration) (AskAnswer, error) {
	if err := ValidateKey(key); err != nil {
		return AskAnswer{}, err
	}
	if err := ValidateTTL(ttl); err != nil {
		return AskAnswer{}, err
	}
	a, err := s.askCall(ctx, `SELECT * FROM lease.hand_over($1, $2, $3, $4)`, key.Account, key.Session, runID, ttl)
	if err != nil {
		return AskAnswer{}, fmt.Errorf("hand %s over: %w", key, translate(err))
	}
	return a, nil
}

// DeclineHandover refuses the ask pending for runID, key's holder (its own,
// secret id): AskDeclined. AskExpired, AskNoAsk and AskNotHeld as for
// HandOver.
func (s *Store) DeclineHandover(ctx context.Context, key Key, runID uuid.UUID) (AskAnswer, error) {
	if err := ValidateKey(key); err != nil {
		return AskAnswer{}, err
	}
	a, err := s.askCall(ctx, `SELECT * FROM lease.decline_handover($1, $2, $3)`, key.Account, key.Session, runID)
	if err != nil {
		return AskAnswer{}, fmt.Errorf("decline the hand-over of %s: %w", key, translate(err))
	}
	return a, nil
}

// WithdrawHandover ends runID's own pending ask on key as the asker gives up
// (AskExpired, recorded as handover_expired). AskHandedOver says the holder
// had handed the lease over already: release it (Release with runID) if it
// will not be used. Otherwise AskNoAsk.
func (s *Store) WithdrawHandover(ctx context.Context, key Key, runID uuid.UUID) (AskAnswer, error) {
	if err := ValidateKey(key); err != nil {
		return AskAnswer{}, err
	}
	a, err := s.askCall(ctx, `SELECT * FROM lease.withdraw_handover($1, $2, $3)`, key.Account, key.Session, runID)
	if err != nil {
		return AskAnswer{}, fmt.Errorf("withdraw the ask on %s: %w", key, translate(err))
	}
	return a, nil
}

// askCall runs one of the ask functions, which carry a run's secret id.
func (s *Store) askCall(ctx context.Context, sql string, args ...any) (AskAnswer, error) {
	var (
		a                AskAnswer
		outcome          string
		asker, holderRun *uuid.UUID
		label            *string
		until            *time.Time
		left             *time.Duration
		fence            *int64
		ahead            *int32
	)
	err := s.pool.QueryRow(ctx, sql, sqlcall.Secret(s.calls.Mode, args...)...).
		Scan(&outcome, &asker, &label, &holderRun, &until, &left, &fence, &ahead)
	if err != nil {
		return AskAnswer{}, err
	}
	a.Outcome = AskOutcome(outcome)
	if asker != nil {
		a.Ask.RunID = *asker
	}
	if label != nil {
		a.Ask.Holder = *label
	}
	if holderRun != nil {
		a.Ask.HolderRunID = *holderRun
	}
	if until != nil {
		a.Ask.Until = *until
	}
	if left != nil {
		a.Ask.Remaining = *left
	}
	if fence != nil {
		a.Fence = *fence
	}
	if ahead != nil {
		a.Ahead = int(*ahead)
	}
	return a, nil
}

// PendingAsk returns the ask pending on key's lease (its deadline not yet
// passed on the database clock), or nil when there is none. It only reads:
// lease_reader may call it.
func (s *Store) PendingAsk(ctx context.Context, key Key) (*PendingAsk, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	return pendingAsk(ctx, s.Pinned(), key)
}

// pendingAsk is PendingAsk on q.
func pendingAsk(ctx context.Context, q Querier, key Key) (*PendingAsk, error) {
	var a PendingAsk
	err := q.QueryRow(ctx, `
		SELECT asker_run_id, asker, holder_run_id, until_at, greatest(until_at - clock_timestamp(), interval '0')
		  FROM lease.handover_ask
		 WHERE account_id = $1 AND session_id = $2 AND state = 'pending' AND until_at > clock_timestamp()`,
		key.Account, key.Session).Scan(&a.RunID, &a.Holder, &a.HolderRunID, &a.Until, &a.Remaining)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the ask pending on %s: %w", key, translate(err))
	}
	return &a, nil
}

// PendingAsks returns every ask pending now (its deadline not passed on the
// database clock), by key: what `leasetop ls` shows beside the leases.
func (s *Store) PendingAsks(ctx context.Context) (map[Key]PendingAsk, error) {
	rows, err := s.Pinned().Query(ctx, `
		SELECT account_id, session_id, asker_run_id, asker, holder_run_id, until_at,
		       greatest(until_at - clock_timestamp(), interval '0')
		  FROM lease.handover_ask
		 WHERE state = 'pending' AND until_at > clock_timestamp()`)
	if err != nil {
		return nil, fmt.Errorf("read the pending asks: %w", translate(err))
	}
	out := make(map[Key]PendingAsk)
	for rows.Next() {
		var (
			k Key
			a PendingAsk
		)
		if err := rows.Scan(&k.Account, &k.Session, &a.RunID, &a.Holder, &a.HolderRunID, &a.Until, &a.Remaining); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the pending asks: %w", translate(err))
		}
		out[k] = a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the pending asks: %w", translate(err))
	}
	return out, nil
}

// watchAskSQL is RenewWatch's read of the ask pending for the renewing run.
// It goes in the renewal's batch, the hottest call there is, without a
// pinned transaction (see Pinned): every function, operator and type in it
// is named with its schema, so it resolves the same under any search_path.
// (OPERATOR() binds like any other operator: the parentheses keep the
// arithmetic apart from the comparisons.)
const watchAskSQL = `
	SELECT asker_run_id, asker, holder_run_id, until_at,
	       greatest(until_at OPERATOR(pg_catalog.-) pg_catalog.clock_timestamp(), interval '0')
	  FROM lease.handover_ask
	 WHERE account_id OPERATOR(pg_catalog.=) $1 AND session_id OPERATOR(pg_catalog.=) $2
	   AND holder_run_id OPERATOR(pg_catalog.=) $3 AND state OPERATOR(pg_catalog.=) 'pending'
	   AND until_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()`

// RenewWatch is Renew that also reads the ask to hand over pending for
// runID (nil when none), in the same round trip: a holder that answers asks
// learns of one at each renewal at no extra round trip. The renewal and the
// read are one pipeline and one implicit transaction, so any error means
// nothing was renewed (as for Renew); a role that may not read
// lease.handover_ask gets ErrPermission: renew with Renew then. With the
// simple protocol (which would write the run's secret into the query text)
// it makes the two calls one after the other.
func (s *Store) RenewWatch(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration) (time.Time, *PendingAsk, error) {
	if err := ValidateKey(key); err != nil {
		return time.Time{}, nil, err
	}
	if err := ValidateTTL(ttl); err != nil {
		return time.Time{}, nil, err
	}
	if s.calls.Mode == pgx.QueryExecModeSimpleProtocol {
		exp, err := s.Renew(ctx, key, runID, ttl)
		if err != nil {
			return exp, nil, err
		}
		a, err := pendingAsk(ctx, s.Pinned(), key)
		if err != nil || a == nil || a.HolderRunID != PublicRunID(runID) {
			return exp, nil, nil // renewed; the ask is read again at the next renewal
		}
		return exp, a, nil
	}
	b := &pgx.Batch{}
	var (
		exp *time.Time
		ask *PendingAsk
	)
	b.Queue(sqlcall.Renew, key.Account, key.Session, runID, ttl).QueryRow(func(row pgx.Row) error {
		return row.Scan(&exp)
	})
	b.Queue(watchAskSQL, key.Account, key.Session, PublicRunID(runID)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var a PendingAsk
			if err := rows.Scan(&a.RunID, &a.Holder, &a.HolderRunID, &a.Until, &a.Remaining); err != nil {
				return err
			}
			ask = &a
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return time.Time{}, nil, fmt.Errorf("renew %s: %w", key, translate(err))
	}
	if exp == nil {
		return time.Time{}, nil, ErrNotHeld
	}
	return *exp, ask, nil
}
