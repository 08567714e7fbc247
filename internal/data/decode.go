package data

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/termtext"
)

// Channel is the notification channel the lease triggers publish on.
const Channel = "lease_events"

// payload mirrors lease.event_json.
type payload struct {
	ID            *int64     `json:"id"`
	At            *time.Time `json:"at"`
	Kind          Kind       `json:"kind"`
	AccountID     string     `json:"account_id"`
	SessionID     string     `json:"session_id"`
	RunID         *uuid.UUID `json:"run_id"`
	PrevRunID     *uuid.UUID `json:"prev_run_id"`
	Fence         *int64     `json:"fence"`
	PrevFence     *int64     `json:"prev_fence"`
	ExpiresAt     *time.Time `json:"expires_at"`
	PrevExpiresAt *time.Time `json:"prev_expires_at"`
	Holder        *string    `json:"holder"`
	Actor         *string    `json:"actor"`
	Reason        *string    `json:"reason"`
	PrevHolder    *string    `json:"prev_holder"`
	MessageID     *int64     `json:"message_id"`
}

// ErrMalformed is returned by decodeEvent for a payload that is not a lease
// event: not JSON, an unknown kind, a missing id or key, or oversized.
var ErrMalformed = errors.New("malformed lease event payload")

// maxPayload is PostgreSQL's NOTIFY payload limit.
const maxPayload = 8000

// decodeEvent decodes a lease_events notification payload. Anyone who can
// connect can NOTIFY on the channel, so the payload is untrusted: decodeEvent
// checks the shape and bounds and returns ErrMalformed for anything else.
func decodeEvent(s string) (Event, error) {
	if len(s) > maxPayload {
		return Event{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(s))
	}
	var p payload
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if !p.Kind.Valid() {
		return Event{}, fmt.Errorf("%w: unknown kind %q", ErrMalformed, truncateForError(string(p.Kind)))
	}
	if p.ID == nil || *p.ID < 0 || (*p.ID == 0) != (p.Kind == KindRenewed) {
		return Event{}, fmt.Errorf("%w: bad id", ErrMalformed)
	}
	e := Event{
		ID: *p.ID, Kind: p.Kind, Key: Key{Account: p.AccountID, Session: p.SessionID},
		At: deref(p.At), RunID: deref(p.RunID), PrevRunID: deref(p.PrevRunID),
		Fence: deref(p.Fence), PrevFence: deref(p.PrevFence),
		ExpiresAt: deref(p.ExpiresAt), PrevExpiresAt: deref(p.PrevExpiresAt),
		Holder: deref(p.Holder), Actor: deref(p.Actor), Reason: deref(p.Reason),
		PrevHolder: deref(p.PrevHolder), MessageID: deref(p.MessageID),
	}
	switch {
	case e.Kind == KindTruncated:
	case e.Kind.AccountWide():
		if err := validateText("account", e.Key.Account, 1, MaxIDBytes); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if e.Key.Session != "" {
			return Event{}, fmt.Errorf("%w: an account's event names a session", ErrMalformed)
		}
	default:
		if err := ValidateKey(e.Key); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		// A message sent while nobody held its conversation, or that
		// expired undelivered, went to no run.
		if e.RunID == uuid.Nil && !e.Kind.Message() {
			return Event{}, fmt.Errorf("%w: missing run_id", ErrMalformed)
		}
		if e.Kind.Message() && e.MessageID <= 0 {
			return Event{}, fmt.Errorf("%w: missing message_id", ErrMalformed)
		}
	}
	return e, nil
}

func truncateForError(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

func randomSuffix() string {
	b := uuid.New()
	return fmt.Sprintf("%x", b[:8])
}

// MarshalJSON encodes e as lease.event_json does: the notification
// payload's fields, with null for absent values. decodeEvent reads it back.
// An event of a named context (Context) has a "context" field first, which
// decodeEvent never reads.
// Text is untrusted: DEL, C1 controls and bidirectional formatting
// characters, which encoding/json leaves raw, are written as \u escapes
// (termtext.JSON), so the JSON is inert on a terminal.
func (e Event) MarshalJSON() ([]byte, error) {
	id, actor := e.ID, e.Actor
	p := payload{
		ID: &id, At: nonZeroTime(e.At), Kind: e.Kind, AccountID: e.Key.Account, SessionID: e.Key.Session,
		RunID: nonZero(e.RunID), PrevRunID: nonZero(e.PrevRunID),
		Fence: nonZero(e.Fence), PrevFence: nonZero(e.PrevFence),
		ExpiresAt: nonZeroTime(e.ExpiresAt), PrevExpiresAt: nonZeroTime(e.PrevExpiresAt),
		Holder: nonZero(e.Holder), Actor: &actor, Reason: nonZero(e.Reason),
		PrevHolder: nonZero(e.PrevHolder), MessageID: nonZero(e.MessageID),
	}
	var v any = p
	if e.Context != "" {
		v = struct {
			Context string `json:"context"`
			payload
		}{e.Context, p}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return termtext.JSON(b), nil
}

func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

func nonZeroTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
