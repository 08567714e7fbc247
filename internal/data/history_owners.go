package data

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrHistoryPruned: the instant asked for is older than the oldest event
// lease.event still keeps (lease.prune_events removed what came before), so
// who held what then cannot be told. The error is a *PrunedError.
var ErrHistoryPruned = errors.New("older than the history kept")

// PrunedError is the ErrHistoryPruned OwnersAt returns.
type PrunedError struct {
	At           time.Time // the instant asked for
	HistoryStart time.Time // the oldest event kept; zero when none is
}

func (e *PrunedError) Error() string {
	if e.HistoryStart.IsZero() {
		return fmt.Sprintf("%s is older than the history kept: lease.event holds no event", e.At.Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s is older than the history kept, which starts at %s",
		e.At.Format(time.RFC3339Nano), e.HistoryStart.Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrHistoryPruned) true.
func (e *PrunedError) Is(target error) bool { return target == ErrHistoryPruned }

// OwnersAt is who held what at one instant, rebuilt from lease.event.
type OwnersAt struct {
	At           time.Time // the instant, on the database clock
	ServerTime   time.Time // the database clock when it was read
	HistoryStart time.Time // the oldest event kept: nothing before it can be told
	// Whole says no event was ever removed from the history (by
	// prune_events): its oldest is the first the database wrote (the
	// lowest id lease.event's sequence issues). Before HistoryStart nobody
	// then held anything: every grant writes an event. It errs only
	// towards false: when the database's very first transition was rolled
	// back, its id is never seen.
	Whole bool
	// Holdings are the leases whose row existed at At (held, or expired and
	// not yet taken over), by account and session.
	Holdings []Holding
}

// Holding is one lease as it was at an instant. Lease's fields are those of
// the row then: RunID (public), Holder, Fence; AcquiredAt is when this
// run's span began (zero when it began before HistoryStart and the current
// row does not tell); RenewedAt is the last renewal at or before the
// instant when the history pins it (see ExpiryKnown), else zero.
type Holding struct {
	Lease
	// Expired says nobody held it: the row was there but its expiry had
	// passed, and nobody had taken it over yet (a lost holder). Exact.
	Expired bool
	// ExpiryKnown says ExpiresAt is exactly the expiry the row had at the
	// instant. Renewals are not recorded in lease.event, so it is known only
	// where the history pins it: at an event of the span (its start, a
	// rejected renewal), before the span's first renewal, after its
	// last one (the current row's renewed_at, or the expiry a rejected
	// renewal, the release or the takeover recorded, when no renewal came
	// between), and once expired (an expired lease is never renewed).
	// Otherwise ExpiresAt is the latest expiry recorded at or before the
	// instant, which the holder had extended since, at times the history
	// does not keep: a lower bound, zero when none is recorded (the span began
	// before HistoryStart); TTL bounds what was left from above when the
	// holder renews with the TTL it acquired with (as lease.Client does).
	ExpiryKnown bool
	// TTL is the TTL the span was granted with (its first expiry minus its
	// start), 0 when the span began before HistoryStart.
	TTL time.Duration
}

// How each kind of event bears on ownership. A kind not listed here (one
// added after this code) is read by what its row says: one that names a
// new run, its fence and the run it replaced (run_id, fence and
// prev_run_id set, as a takeover's) starts a new span for that run at its
// time; any other changes nobody's ownership and is skipped. A kind that
// ends a lease without a successor must be listed in spanEnds.

// spanStarts are the kinds that begin a span of the event's run_id with its
// fence and expiry; preempted and handed_over give the key to a new run as a
// takeover does.
func spanStarts() []string {
	return []string{string(KindAcquired), string(KindTakenOver), "preempted", "handed_over"}
}

// spanEnds are the kinds that delete the lease: their run_id, fence and
// expires_at are the ended span's.
func spanEnds() []string { return []string{string(KindReleased), string(KindForceReleased)} }

// spanNeutral are the kinds that change no ownership. renew_rejected records
// the row as it was (fence, expiry, holder) when a zombie was refused;
// truncated (which names no key) is read separately, as it ends every span.
// The hand-over's asks name the asker (run_id), the holder (prev_run_id)
// and the holder's fence, as a takeover would, but move nothing; so does a
// message carried from one run to the next (message_carried), and no
// other message event moves a lease either.
func spanNeutral() []string {
	return []string{string(KindRenewRejected), string(KindTruncated), string(KindRenewed), "queue_joined", "queue_left",
		string(KindHandoverAsked), string(KindHandoverDeclined), string(KindHandoverExpired),
		string(KindLimitSet), string(KindLimitRemoved), string(KindLimitRefused),
		string(KindMessageSent), string(KindMessageDelivered), string(KindMessageCarried),
		string(KindMessageAcked), string(KindMessageExpired)}
}

// ownershipCond is true for the event rows (alias e) that start or end a
// span, as the comment above says.
const ownershipCond = `(e.kind::text = ANY($2::text[])
	OR (e.kind::text <> ALL($3::text[]) AND e.run_id IS NOT NULL AND e.fence IS NOT NULL AND e.prev_run_id IS NOT NULL))`

// ownersQuery builds OwnersAt's statement: for every candidate session, the
// last ownership event at or before $1 (l), the first after it (n), the
// rejected renewals nearest $1 on either side within that span (pr, nr),
// the current row (cur), and the last TRUNCATE at or before $1 and the
// first after it (tp, tn). Each lateral is a range of event_key_at_idx;
// the truncations, which name no session, are the empty ids' range of the
// same index.
//
// The candidates are f's Keys when it names them (or its Accounts times its
// Sessions, up to maxCrossKeys of them). Otherwise they are the
// sessions that may have had a row at $1: those that have one now, and
// those whose row was deleted after $1 (a release after $1, which costs a
// scan of the events since $1 through event_at_idx; and, only when a
// TRUNCATE came after $1, every session with an event before it).
func ownersQuery(at time.Time, f HistoryFilter) (string, []any) {
	const maxCrossKeys = 10000
	p := params{at, append(spanStarts(), spanEnds()...), spanNeutral()}
	if len(f.Keys) == 0 && len(f.Accounts) > 0 && len(f.Sessions) > 0 && len(f.Accounts)*len(f.Sessions) <= maxCrossKeys {
		for _, a := range f.Accounts {
			for _, s := range f.Sessions {
				f.Keys = append(f.Keys, Key{Account: a, Session: s})
			}
		}
	}
	rest := f
	rest.Keys = nil
	var cand string
	if len(f.Keys) > 0 {
		accts, sesss := splitKeys(f.Keys)
		cand = "SELECT DISTINCT k.account_id, k.session_id FROM unnest(" + p.add(accts) + "::text[], " +
			p.add(sesss) + "::text[]) k(account_id, session_id)" + where(rest.keyConds("k", &p))
	} else {
		live := "SELECT l.account_id, l.session_id FROM lease.session_lease l" + where(rest.keyConds("l", &p))
		released := "SELECT e.account_id, e.session_id FROM lease.event e" + where(append(rest.keyConds("e", &p),
			"e.at > $1", "e.kind::text = ANY("+p.add(spanEnds())+"::text[])"))
		truncated := "SELECT e.account_id, e.session_id FROM lease.event e" + where(append(rest.keyConds("e", &p),
			"(SELECT at FROM tn) IS NOT NULL", "e.at <= $1", "e.account_id <> ''"))
		cand = live + " UNION " + released + " UNION " + truncated
	}
	const evKey = `e.account_id = c.account_id AND e.session_id = c.session_id`
	const trunc = `SELECT %s(e.at) AS at FROM lease.event e
		WHERE e.account_id = '' AND e.session_id = '' AND e.kind::text = 'truncated' AND e.at %s $1`
	q := `WITH tp AS (` + fmt.Sprintf(trunc, "max", "<=") + `),
	tn AS (` + fmt.Sprintf(trunc, "min", ">") + `),
	cand(account_id, session_id) AS (` + cand + `)
	SELECT c.account_id, c.session_id,
		l.id, l.at, l.kind, l.run_id, l.fence, l.expires_at, l.holder,
		n.id, n.at, n.kind, n.run_id, n.prev_run_id, n.fence, n.prev_fence, n.expires_at, n.prev_expires_at, n.holder,
		pr.at, pr.fence, pr.expires_at, pr.holder,
		nr.at, nr.fence, nr.expires_at, nr.holder,
		cur.run_id, cur.holder, cur.fence, cur.acquired_at, cur.renewed_at, cur.expires_at,
		tp.at, tn.at
	FROM cand c CROSS JOIN tp CROSS JOIN tn
	LEFT JOIN LATERAL (
		SELECT e.id, e.at, e.kind::text AS kind, e.run_id, e.fence, e.expires_at, e.holder FROM lease.event e
		 WHERE ` + evKey + ` AND e.at <= $1 AND ` + ownershipCond + `
		 ORDER BY e.at DESC, e.id DESC LIMIT 1) l ON true
	LEFT JOIN LATERAL (
		SELECT e.id, e.at, e.kind::text AS kind, e.run_id, e.prev_run_id, e.fence, e.prev_fence,
		       e.expires_at, e.prev_expires_at, e.holder FROM lease.event e
		 WHERE ` + evKey + ` AND e.at > $1 AND ` + ownershipCond + `
		 ORDER BY e.at, e.id LIMIT 1) n ON true
	LEFT JOIN LATERAL (
		SELECT e.at, e.fence, e.expires_at, e.holder FROM lease.event e
		 WHERE ` + evKey + ` AND e.kind::text = 'renew_rejected'
		   AND e.at <= $1 AND e.at >= coalesce(l.at, '-infinity'::timestamptz)
		   AND (l.id IS NULL OR e.at > l.at OR e.id > l.id)
		 ORDER BY e.at DESC, e.id DESC LIMIT 1) pr ON true
	LEFT JOIN LATERAL (
		SELECT e.at, e.fence, e.expires_at, e.holder FROM lease.event e
		 WHERE ` + evKey + ` AND e.kind::text = 'renew_rejected'
		   AND e.at > $1 AND e.at <= coalesce(n.at, 'infinity'::timestamptz)
		   AND (n.id IS NULL OR e.at < n.at OR e.id < n.id)
		 ORDER BY e.at, e.id LIMIT 1) nr ON true
	LEFT JOIN lease.session_lease cur ON cur.account_id = c.account_id AND cur.session_id = c.session_id`
	return q, p
}

func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// OwnersAt returns who held what at the instant at (on the database clock),
// among the sessions f selects (its Accounts, Sessions and Keys; its other
// fields are ignored), rebuilt from lease.event and the current rows, in
// one read-only snapshot: it needs only lease_reader's rights and runs on a
// standby.
//
// Per session, the last event at or before at that starts or ends a span
// decides: acquired, taken_over, preempted and handed_over start a span of
// their run; released and force_released end it; a TRUNCATE ends them all;
// a span also ends at its expiry (the Holding is then Expired until a
// successor's event). A session with no such event since HistoryStart is
// held at at when the first event after it ends or replaces a span (which
// therefore began before the history kept), or when its current row was
// acquired by then. Holding's ExpiryKnown says how exactly the expiry is
// known.
//
// Limits: an acquire that waited on the row lock of a concurrent release
// (the key had expired) records the time it was called, up to that wait
// before the release's, and in that window OwnersAt names the new run. On
// a standby the history is what it has replayed: an instant after its last
// replay reads as if nothing happened since.
//
// An at older than the oldest event kept is a *PrunedError
// (ErrHistoryPruned), returned with an OwnersAt that carries HistoryStart;
// an at after the server's clock is ErrInvalid.
func (s *Store) OwnersAt(ctx context.Context, at time.Time, f HistoryFilter) (OwnersAt, error) {
	out := OwnersAt{At: at}
	var rows []ownerRow
	b := &pgx.Batch{}
	queueHistoryStart(b, &out)
	queueOwners(b, at, f, &rows)
	if err := s.readSnapshot(ctx, b); err != nil {
		return out, fmt.Errorf("read history: %w", translate(err))
	}
	return ownersOf(out, rows)
}

// sortHoldings orders holdings by account and session.
func sortHoldings(hs []Holding) {
	slices.SortFunc(hs, func(a, b Holding) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session))
	})
}
