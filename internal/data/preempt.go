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

// AcquireOptions are what a holder declares about its lease when it
// acquires it. The zero value is Acquire's: preemptible, no attachment.
type AcquireOptions struct {
	// NotPreemptible refuses every Preempt of the lease (a payment in
	// progress): Preempt returns ErrNotPreemptible and writes nothing.
	NotPreemptible bool
	// Attachment is a short text the holder publishes on its lease, at
	// most MaxAttachmentBytes, such as the id of the stream its run writes
	// to, so that a device that finds the session busy can join that run
	// (HeldError.Attachment). Never a secret: everyone who may read the
	// lease table reads it. Control, bidirectional formatting and invisible
	// characters are refused, as in holder labels.
	Attachment string
	// Pool is the pool within its account the run counts against, besides
	// the account itself ("" none): a limit set on the pool bounds its live
	// runs (Store.SetLimit). At most MaxPoolBytes, the rules of holder labels.
	Pool string
	// Priority is the run's priority (higher wins; 0 the default), recorded
	// on its lease: a Preempt in an account at its limit may take the slot of
	// a preemptible run of a strictly lower priority.
	Priority int16
}

func (o AcquireOptions) validate() error {
	if err := ValidateAttachment(o.Attachment); err != nil {
		return err
	}
	return ValidatePool(o.Pool)
}

// AcquireWith is Acquire with the holder's options (lease.acquire_with):
// the lease it grants, or holds already for a retry, carries them from its
// first moment. With the zero AcquireOptions it is Acquire.
func (s *Store) AcquireWith(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration, holder string, opt AcquireOptions) (Grant, error) {
	if opt == (AcquireOptions{}) {
		return s.Acquire(ctx, key, runID, ttl, holder)
	}
	if err := validateAcquire(key, runID, ttl, holder); err != nil {
		return Grant{}, err
	}
	if err := opt.validate(); err != nil {
		return Grant{}, err
	}
	args := []any{key.Account, key.Session, runID, ttl, holder, !opt.NotPreemptible, opt.Attachment, opt.Pool, opt.Priority}
	g, refusal, err := s.grantCall(ctx, sqlcall.AcquireWithQuiet, key, runID, args, opt.Pool)
	if err != nil {
		return Grant{}, fmt.Errorf("acquire %s: %w", key, translate(err))
	}
	return g, refusal
}

// Preempt grants key's lease to runID now (lease.preempt): it takes the
// lease from the run holding it, if that run's lease is unexpired and
// preemptible; a free or expired key is granted as Acquire grants it. The
// preempted run's renewals and fence checks fail from this commit on, and
// the history records a KindPreempted event with both runs, both labels,
// the login and reason. The login must be a member of lease_preempt
// (otherwise ErrPermission, its text ending with PreemptRoleHint). The
// preempted run's program may still be working: PreemptPending tells when
// it said it stopped.
//
// It returns the grant as Acquire does (runID's own unexpired lease is
// returned unchanged: a retry), or:
//   - an error matching both ErrNotPreemptible and ErrHeld, with a
//     *HeldError naming the holder, when the holder declared that it must
//     not be preempted; nothing was written;
//   - a *HeldError (ErrHeld) naming the new holder when the key changed
//     hands while the call waited for the row: of preempts that race for one
//     holder exactly one wins.
//
// In an account or pool at its limit it takes a slot from the account's
// lowest-priority preemptible run whose priority is below opt.Priority, in
// another session: that run's lease ends as a forced release
// (KindForceReleased, the login as Actor, a Reason naming this run and both
// priorities) and PreemptPending waits for it; with no such run it returns
// the *LimitError.
//
// reason is recorded in the event (at most MaxReasonBytes, the rules of
// holder labels); opt applies to the new lease as in AcquireWith.
func (s *Store) Preempt(ctx context.Context, key Key, runID uuid.UUID, ttl time.Duration, holder, reason string, opt AcquireOptions) (Grant, error) {
	if err := validateAcquire(key, runID, ttl, holder); err != nil {
		return Grant{}, err
	}
	if err := ValidateReason(reason); err != nil {
		return Grant{}, err
	}
	if err := opt.validate(); err != nil {
		return Grant{}, err
	}
	args := []any{key.Account, key.Session, runID, ttl, holder, reason, !opt.NotPreemptible, opt.Attachment, opt.Pool, opt.Priority}
	g, refusal, err := s.grantCall(ctx, sqlcall.PreemptQuiet, key, runID, args, opt.Pool)
	if err != nil {
		err = translate(err)
		if errors.Is(err, ErrNotPreemptible) {
			h, _ := s.held(ctx, key, runID)
			return Grant{}, fmt.Errorf("preempt %s: %w: %w", key, ErrNotPreemptible, h)
		}
		if errors.Is(err, ErrPermission) {
			return Grant{}, fmt.Errorf("preempt %s: %w (%s)", key, err, PreemptRoleHint)
		}
		return Grant{}, fmt.Errorf("preempt %s: %w", key, err)
	}
	return g, refusal
}

// PreemptRoleHint is what a refused preempt's ErrPermission adds to the
// server's message: the role that grants the right.
const PreemptRoleHint = "preempting needs membership in the role lease_preempt"

// PreemptStopped is the preempted run's word that its work stopped: runID
// (its own, secret id) lost key's lease to a Preempt, and its program has
// ended what it did under it. The preemptor, waiting in PreemptPending,
// learns it. It reports whether that was news: false, with nothing written,
// when runID is not the session's last preempted run or said so already.
func (s *Store) PreemptStopped(ctx context.Context, key Key, runID uuid.UUID) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	var news bool
	err := s.pool.QueryRow(ctx, sqlcall.PreemptStopped,
		sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID)...).Scan(&news)
	if err != nil {
		return false, fmt.Errorf("report the preempted run of %s stopped: %w", key, translate(err))
	}
	return news, nil
}

// PreemptPending reports whether the run that runID (the preemptor's own,
// secret id) preempted on key has not yet said that its work stopped
// (PreemptStopped). False when it has, when runID preempted nobody (the key
// was free or expired), or when key was preempted again since.
func (s *Store) PreemptPending(ctx context.Context, key Key, runID uuid.UUID) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	var pending bool
	err := s.pool.QueryRow(ctx, sqlcall.PreemptPending,
		sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID)...).Scan(&pending)
	if err != nil {
		return false, fmt.Errorf("read whether the run preempted on %s stopped: %w", key, translate(err))
	}
	return pending, nil
}

// grantCall makes a call that returns at most one grant row (an acquire of
// key in pool) and, when it grants nothing, says why in refusal (refused).
// It makes the call again, up to 3 calls in all, after a serialization
// failure (nothing granted) and after a refusal whose cause was gone when
// it was read: a lease or a slot that expired between the call and the read
// is the caller's to take, not a "held" with nobody holding it.
func (s *Store) grantCall(ctx context.Context, q sqlcall.QuietCall, key Key, runID uuid.UUID, args []any, pool string) (g Grant, refusal, err error) {
	var found bool
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&g.RunID, &g.Fence, &g.ExpiresAt); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	for attempt := 1; attempt <= 3; attempt++ {
		found = false
		err = s.call(ctx, q, key, runID, args, scan)
		if isSerializationFailure(err) {
			continue
		}
		if err != nil || found {
			return g, nil, err
		}
		var stale bool
		if refusal, stale = s.refused(ctx, key, runID, pool); !stale {
			return Grant{}, refusal, nil
		}
	}
	if err != nil {
		return Grant{}, nil, err
	}
	return Grant{}, refusal, nil
}

// SetAttachment replaces the attachment of runID's unexpired lease ("":
// none). runID is the run's own (secret) id: only the holder publishes its
// attachment. It returns ErrNotHeld when runID no longer holds the lease.
// It is no ownership change: no event, no notification.
func (s *Store) SetAttachment(ctx context.Context, key Key, runID uuid.UUID, attachment string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ValidateAttachment(attachment); err != nil {
		return err
	}
	var ok bool
	err := s.pool.QueryRow(ctx, sqlcall.SetAttachment,
		sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID, attachment)...).Scan(&ok)
	if err != nil {
		return fmt.Errorf("set attachment %s: %w", key, translate(err))
	}
	if !ok {
		return ErrNotHeld
	}
	return nil
}
