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

// MessageKind is what a message asks of the run that holds its
// conversation (sql/inbox.sql).
type MessageKind string

// The kinds of message.
const (
	// MessageSteer is text for the run's next turn ("also check the March
	// invoices"): the run reads it and acknowledges it.
	MessageSteer MessageKind = "steer"
	// MessageCancel asks the run to stop: its body, if any, says why.
	MessageCancel MessageKind = "cancel"
)

// Valid reports whether k is one of the kinds.
func (k MessageKind) Valid() bool { return k == MessageSteer || k == MessageCancel }

// The inbox's bounds (sql/inbox.sql).
const (
	// MaxMessageBytes bounds a message's body: one line of text.
	MaxMessageBytes = 4096
	// MaxMessageKeyBytes bounds an idempotency key.
	MaxMessageKeyBytes = 128
	// MessageLimit is the most live (unacknowledged, unexpired) messages a
	// conversation's inbox holds (lease.message_limit).
	MessageLimit = 64
	// MessageShare is the most of them one login may have sent
	// (lease.message_share): half, so that no login can fill an inbox.
	MessageShare = MessageLimit / 2
	// MessageLoginLimit is the most live messages one login may have in
	// every inbox together (lease.message_login_limit).
	MessageLoginLimit = 1000
	// MaxReceive is the most messages one ReceiveMessages returns.
	MaxReceive = 64
	// MaxAckMany is the most message ids one AckMessages takes
	// (lease.ack_messages).
	MaxAckMany = MessageLimit
)

// Errors of the inbox.
var (
	// ErrMessageKeyReused: the idempotency key names another message of the
	// conversation already (another kind or body); nothing was sent. It is
	// an ErrInvalid.
	ErrMessageKeyReused = fmt.Errorf("%w: the idempotency key names another message", ErrInvalid)
	// ErrInboxFull: the conversation's inbox holds MessageLimit live
	// messages, or the caller's login its share of them or of every inbox
	// (ErrInboxShareFull); nothing was sent.
	ErrInboxFull = errors.New("the conversation's inbox is full")
	// ErrInboxShareFull: the caller's login has sent MessageShare of the
	// conversation's live messages, or MessageLoginLimit live messages in
	// all; nothing was sent. errors.Is(err, ErrInboxFull) holds for it too.
	ErrInboxShareFull = fmt.Errorf("%w for this login", ErrInboxFull)
)

// MessageState is where a message is.
type MessageState string

// The states of a message.
const (
	MessageWaiting   MessageState = "waiting"   // sent, not delivered to any run yet
	MessageDelivered MessageState = "delivered" // delivered to a run (RunID, Fence), not acknowledged
	MessageAcked     MessageState = "acked"     // acknowledged by a run (RunID, Fence): final
	MessageExpired   MessageState = "expired"   // not acknowledged before its expiry: final
)

// Final reports whether a message in state s stays there.
func (s MessageState) Final() bool { return s == MessageAcked || s == MessageExpired }

// Reached reports whether a message in state s has reached want or gone
// past it: acked has reached delivered.
func (s MessageState) Reached(want MessageState) bool {
	switch want {
	case MessageWaiting:
		return true
	case MessageDelivered:
		return s == MessageDelivered || s == MessageAcked
	}
	return s == want
}

// MessageStatus is where a message is, on the database clock when it was
// read (lease.message_status).
type MessageStatus struct {
	ID    int64
	Kind  MessageKind
	State MessageState
	// RunID and Fence are the run it was delivered to (MessageDelivered),
	// acknowledged by (MessageAcked) or last delivered to (MessageExpired):
	// a public run id. Zero when none.
	RunID uuid.UUID
	Fence int64
	// SentAt, ExpiresAt, DeliveredAt (the last delivery) and AckedAt;
	// zero when not yet.
	SentAt, ExpiresAt, DeliveredAt, AckedAt time.Time
	// Created says this send wrote the message; false for a resend of the
	// same key (or a read).
	Created bool
}

// Message is one message of a conversation's inbox as its holder receives
// it (lease.receive_messages). Sender and Body are untrusted text.
type Message struct {
	Key  Key
	ID   int64 // orders the conversation's messages
	Kind MessageKind
	Body string
	// Sender is the sender's label, Actor its login (session_user).
	Sender, Actor     string
	SentAt, ExpiresAt time.Time
	// CarriedFrom is the public run id this message was delivered to
	// before, which ended without acknowledging it; zero on a first
	// delivery, and when this run had received it already.
	CarriedFrom uuid.UUID
}

// AckOutcome is what lease.ack_message answered.
type AckOutcome string

// The outcomes of an acknowledgement.
const (
	AckDone         AckOutcome = "acked"         // acknowledged now
	AckBefore       AckOutcome = "acked_before"  // this run had acknowledged it: nothing written
	AckExpired      AckOutcome = "expired"       // it expired unacknowledged
	AckNotDelivered AckOutcome = "not_delivered" // no such message, or not this run's to acknowledge
)

// ValidateMessage checks a message before it is sent: a known kind, a body
// of one line of at most MaxMessageBytes (a steer's not empty), a sender
// label as a holder label, an idempotency key of 1 to MaxMessageKeyBytes,
// and 0 < ttl <= 24h.
func ValidateMessage(kind MessageKind, body, sender, idemKey string, ttl time.Duration) error {
	if !kind.Valid() {
		return &InputError{Field: "message kind", Problem: fmt.Sprintf("must be steer or cancel, got %q", truncateForError(string(kind)))}
	}
	if kind == MessageSteer && body == "" {
		return &InputError{Field: "message", Problem: "must not be empty for a steer"}
	}
	if err := validateText("message", body, 0, MaxMessageBytes); err != nil {
		return err
	}
	if err := validateText("sender", sender, 0, MaxHolderBytes); err != nil {
		return err
	}
	if err := validateText("idempotency key", idemKey, 1, MaxMessageKeyBytes); err != nil {
		return err
	}
	if ttl <= 0 || ttl > MaxTTL {
		return &InputError{Field: "message ttl", Problem: "must be greater than 0 and at most 24h, got " + ttl.String()}
	}
	return nil
}

// SendMessage sends a message to key's conversation, for whichever run
// holds it (now or next), labelled sender, under idempotency key idemKey,
// expiring after ttl unless acknowledged. A resend with the same key, kind
// and body is the same message: its status, Created false, nothing written;
// another kind or body under the key is ErrMessageKeyReused. A full inbox
// is ErrInboxFull, the login's full share ErrInboxShareFull; nothing is
// written. Any lease_app login may send to any conversation: authorize the
// sender first (lease.Client.Send takes a Permit).
func (s *Store) SendMessage(ctx context.Context, key Key, kind MessageKind, body, sender, idemKey string, ttl time.Duration) (MessageStatus, error) {
	if err := ValidateKey(key); err != nil {
		return MessageStatus{}, err
	}
	if err := ValidateMessage(kind, body, sender, idemKey, ttl); err != nil {
		return MessageStatus{}, err
	}
	var (
		st MessageStatus
		ok bool
	)
	err := s.callNotify(ctx, sqlcall.SendQuiet, []any{key.Account, key.Session, string(kind), body, sender, idemKey, ttl},
		[]any{key.Account, key.Session, uuid.Nil}, // a send's notification names no run (sql/inbox.sql)
		func(rows pgx.Rows) error {
			if !rows.Next() {
				return rows.Err()
			}
			var err error
			st, ok, err = scanStatus(rows)
			return err
		})
	switch {
	case err != nil:
		return MessageStatus{}, fmt.Errorf("send to %s: %w", key, inboxError(err))
	case !ok:
		return MessageStatus{}, fmt.Errorf("send to %s: no status returned", key)
	}
	return st, nil
}

// MessageStateOf returns where key's message sent with idemKey is, and false
// when there is none (never sent, or deleted by MaintainMessages). It reads
// no body.
func (s *Store) MessageStateOf(ctx context.Context, key Key, idemKey string) (MessageStatus, bool, error) {
	if err := ValidateKey(key); err != nil {
		return MessageStatus{}, false, err
	}
	if err := validateText("idempotency key", idemKey, 1, MaxMessageKeyBytes); err != nil {
		return MessageStatus{}, false, err
	}
	st, ok, err := s.messageStatus(ctx, sqlcall.MessageState, key.Account, key.Session, idemKey)
	if err != nil {
		return MessageStatus{}, false, fmt.Errorf("read the message %q of %s: %w", idemKey, key, translate(err))
	}
	return st, ok, nil
}

// messageStatus runs a call that returns a lease.message_status; ok is false
// when it returned NULL.
func (s *Store) messageStatus(ctx context.Context, query string, args ...any) (MessageStatus, bool, error) {
	return scanStatus(s.pool.QueryRow(ctx, query, args...))
}

// scanStatus scans a lease.message_status's columns; ok is false when it
// is NULL.
func scanStatus(row pgx.Row) (st MessageStatus, ok bool, err error) {
	var (
		id, fence               *int64
		kind, state             *string
		run                     *uuid.UUID
		sent, exp, deliv, acked *time.Time
		created                 *bool
	)
	if err := row.Scan(&id, &kind, &state, &run, &fence, &sent, &exp, &deliv, &acked, &created); err != nil || id == nil {
		return MessageStatus{}, false, err
	}
	st.ID, st.Kind, st.State = *id, MessageKind(deref(kind)), MessageState(deref(state))
	st.RunID, st.Fence = deref(run), deref(fence)
	st.SentAt, st.ExpiresAt, st.DeliveredAt, st.AckedAt = deref(sent), deref(exp), deref(deliv), deref(acked)
	st.Created = deref(created)
	return st, true, nil
}

// ReceiveMessages returns key's messages after the id after that nobody
// acknowledged and that have not expired, oldest first, at most max (1 to
// MaxReceive), to runID (the run's own, secret id) while it holds key's
// unexpired lease: ErrNotHeld otherwise. Each is marked delivered to this
// run and fence (recorded once per run: message_delivered, or
// message_carried from the run it was delivered to before); calling again
// with the same after returns the same messages and writes nothing new.
func (s *Store) ReceiveMessages(ctx context.Context, key Key, runID uuid.UUID, after int64, max int) ([]Message, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if after < 0 || max < 1 || max > MaxReceive {
		return nil, &InputError{Field: "receive", Problem: fmt.Sprintf("wants after >= 0 and 1 to %d messages, got after %d, max %d", MaxReceive, after, max)}
	}
	rows, err := s.pool.Query(ctx, sqlcall.ReceiveMessages, sqlcall.Secret(s.calls.Mode, key.Account, key.Session, runID, after, max)...)
	if err != nil {
		return nil, fmt.Errorf("receive %s: %w", key, inboxError(err))
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		m := Message{Key: key}
		var (
			kind    string
			carried *uuid.UUID
		)
		if err := rows.Scan(&m.ID, &kind, &m.Body, &m.Sender, &m.Actor, &m.SentAt, &m.ExpiresAt, &carried); err != nil {
			return nil, fmt.Errorf("receive %s: %w", key, inboxError(err))
		}
		m.Kind, m.CarriedFrom = MessageKind(kind), deref(carried)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("receive %s: %w", key, inboxError(err))
	}
	return out, nil
}

// AckMessage acknowledges key's message id for runID (the run's own,
// secret id), which must hold key's unexpired lease (ErrNotHeld otherwise)
// and have received it: AckDone, or AckBefore when it had already; a
// message past its expiry is AckExpired, one this run did not receive
// AckNotDelivered (nothing written). The lease row is locked as a fence
// check locks it, so no other run takes the lease before the
// acknowledgement commits.
func (s *Store) AckMessage(ctx context.Context, key Key, runID uuid.UUID, id int64) (AckOutcome, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	var outcome string
	err := s.call(ctx, sqlcall.AckQuiet, key, runID, []any{key.Account, key.Session, runID, id}, func(rows pgx.Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		return rows.Scan(&outcome)
	})
	if err != nil {
		return "", fmt.Errorf("acknowledge message %d of %s: %w", id, key, inboxError(err))
	}
	return AckOutcome(outcome), nil
}

// AckMessages acknowledges many of key's messages for runID at once, as
// AckMessage acknowledges one, under one fence check and in one
// transaction (lease.ack_messages: one commit, one WAL flush, one round
// trip): ids holds 1 to MaxAckMany ids (a repeated one counts once). It
// returns each distinct id's outcome; ErrNotHeld (nothing written) when
// runID does not hold key's unexpired lease.
func (s *Store) AckMessages(ctx context.Context, key Key, runID uuid.UUID, ids []int64) (map[int64]AckOutcome, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if len(ids) < 1 || len(ids) > MaxAckMany {
		return nil, &InputError{Field: "acknowledgement", Problem: fmt.Sprintf("wants 1 to %d message ids, got %d", MaxAckMany, len(ids))}
	}
	out := make(map[int64]AckOutcome, len(ids))
	err := s.call(ctx, sqlcall.AckManyQuiet, key, runID, []any{key.Account, key.Session, runID, ids}, func(rows pgx.Rows) error {
		for rows.Next() {
			var (
				id      int64
				outcome string
			)
			if err := rows.Scan(&id, &outcome); err != nil {
				return err
			}
			out[id] = AckOutcome(outcome)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("acknowledge %d messages of %s: %w", len(ids), key, inboxError(err))
	}
	return out, nil
}

// Inbox is the live messages of one conversation (none acknowledged or
// expired), on the database clock when read: how many, how many no run has
// received yet, and the oldest one's age.
type Inbox struct {
	Live, Waiting int
	Oldest        time.Duration
}

// Inboxes returns every conversation's live messages, by key: the inbox's
// depth and its oldest message's age (what the monitor and the exporter
// show). It reads no body: lease_reader may call it.
func (s *Store) Inboxes(ctx context.Context) (map[Key]Inbox, error) {
	rows, err := s.Pinned().Query(ctx, `
		SELECT account_id, session_id, count(*), count(*) FILTER (WHERE delivered_run IS NULL),
		       clock_timestamp() - min(sent_at)
		  FROM lease.message
		 WHERE acked_at IS NULL AND expired_at IS NULL AND expires_at > clock_timestamp()
		 GROUP BY account_id, session_id`)
	if err != nil {
		return nil, fmt.Errorf("read the inboxes: %w", translate(err))
	}
	defer rows.Close()
	out := map[Key]Inbox{}
	for rows.Next() {
		var (
			k             Key
			live, waiting int64
			oldest        time.Duration
		)
		if err := rows.Scan(&k.Account, &k.Session, &live, &waiting, &oldest); err != nil {
			return nil, fmt.Errorf("read the inboxes: %w", translate(err))
		}
		out[k] = Inbox{Live: int(live), Waiting: int(waiting), Oldest: max(oldest, 0)}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the inboxes: %w", translate(err))
	}
	return out, nil
}

// MaintainMessages is the inbox's upkeep (lease.maintain_messages, role
// lease_admin): it writes the message_expired events of at most max messages
// past their expiry, and, when keep is more than 0, deletes the messages
// that ended (acknowledged or expired) more than keep ago. It returns how
// many it expired and deleted.
func (s *Store) MaintainMessages(ctx context.Context, keep time.Duration, max int) (expired int, deleted int64, err error) {
	if keep < 0 || max < 1 || max > 100000 {
		return 0, 0, &InputError{Field: "maintain messages", Problem: fmt.Sprintf("wants keep >= 0 and 1 to 100000 messages, got %s, %d", keep, max)}
	}
	var k any // NULL: delete nothing
	if keep > 0 {
		k = keep
	}
	var n int32
	if err := s.pool.QueryRow(ctx, sqlcall.MaintainMessages, k, max).Scan(&n, &deleted); err != nil {
		return 0, 0, fmt.Errorf("maintain the inboxes: %w", translate(err))
	}
	return int(n), deleted, nil
}

// InboxStats sums up every conversation's inbox (InboxStats): what the
// exporter exports.
type InboxStats struct {
	// Messages are the live messages (sent, neither acknowledged nor
	// expired), Undelivered those no run received yet, Sessions the
	// conversations that have one.
	Messages, Undelivered, Sessions int
	// Oldest is the oldest live message's age on the server clock, 0 when
	// there is none.
	Oldest time.Duration
}

// InboxStats reads the inboxes' totals in one aggregate: a lease_reader's
// read (no body).
func (s *Store) InboxStats(ctx context.Context) (InboxStats, error) {
	var (
		st     InboxStats
		oldest *time.Duration
	)
	err := s.Pinned().QueryRow(ctx, `
		SELECT count(*)::integer, (count(*) FILTER (WHERE delivered_run IS NULL))::integer,
		       (count(DISTINCT (account_id, session_id)))::integer, clock_timestamp() - min(sent_at)
		  FROM lease.message
		 WHERE acked_at IS NULL AND expired_at IS NULL AND expires_at > clock_timestamp()`).
		Scan(&st.Messages, &st.Undelivered, &st.Sessions, &oldest)
	if err != nil {
		return InboxStats{}, fmt.Errorf("read the inboxes: %w", translate(err))
	}
	if oldest != nil {
		st.Oldest = max(*oldest, 0)
	}
	return st, nil
}
