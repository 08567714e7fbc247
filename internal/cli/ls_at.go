package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// lsAt prints who held what at the instant a names among the sessions f
// selects, rebuilt from the history (data.Store.OwnersAt). An instant older than the history kept is
// one line and ExitUsage, nothing printed on stdout.
func lsAt(ctx context.Context, env Env, store *data.Store, a timeArg, f data.HistoryFilter, asJSON bool) error {
	owners, err := readOwnersAt(ctx, store, a, f)
	if err != nil {
		return connError(err)
	}
	if asJSON {
		return writeOwnersJSON(env.Stdout, owners)
	}
	return writeOwnersText(env.Stdout, owners)
}

// readOwnersAt reads who held what at the instant a names, on store's
// clock. An instant older than the history kept is ExitUsage; any other
// error is the database's, for connError to put in one line.
func readOwnersAt(ctx context.Context, store *data.Store, a timeArg, f data.HistoryFilter) (data.OwnersAt, error) {
	now, err := store.ServerTime(ctx)
	if err != nil {
		return data.OwnersAt{}, err
	}
	owners, err := store.OwnersAt(ctx, a.at(now), f)
	if errors.Is(err, data.ErrHistoryPruned) {
		return data.OwnersAt{}, &ExitError{Code: ExitUsage, Err: fmt.Errorf("ls --at: %w", err)}
	}
	return owners, err
}

// holdingJSON is one lease in ls --at --json: ls --json's fields as they
// were at the instant; null where the history does not tell.
type holdingJSON struct {
	Context    string     `json:"context,omitempty"` // with --context: the database it is in
	AccountID  string     `json:"account_id"`
	SessionID  string     `json:"session_id"`
	RunID      string     `json:"run_id"`
	Holder     string     `json:"holder"`
	Fence      int64      `json:"fence"`
	AcquiredAt *time.Time `json:"acquired_at"` // null: before the history kept
	RenewedAt  *time.Time `json:"renewed_at"`  // null: not recorded
	ExpiresAt  *time.Time `json:"expires_at"`  // exact when expiry_known, else a lower bound
	// RemainingSeconds is expires_at minus the instant (negative once
	// expired); a lower bound unless expiry_known.
	RemainingSeconds *float64 `json:"remaining_seconds"`
	ExpiryKnown      bool     `json:"expiry_known"`
	TTLSeconds       *float64 `json:"ttl_seconds"` // the TTL the span was granted with
	Expired          bool     `json:"expired"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func writeOwnersJSON(w io.Writer, o data.OwnersAt) error {
	out := struct {
		AsOf         time.Time     `json:"as_of"`
		ServerTime   time.Time     `json:"server_time"`
		HistoryStart time.Time     `json:"history_start"`
		Leases       []holdingJSON `json:"leases"`
	}{AsOf: o.At, ServerTime: o.ServerTime, HistoryStart: o.HistoryStart, Leases: holdingsJSON(nil, o, "")}
	return writeJSON(w, out)
}

// holdingsJSON appends o's leases to dst as ls --at --json lists them,
// tagged with context when it is not "".
func holdingsJSON(dst []holdingJSON, o data.OwnersAt, context string) []holdingJSON {
	if dst == nil {
		dst = []holdingJSON{}
	}
	for _, h := range o.Holdings {
		j := holdingJSON{
			Context:   context,
			AccountID: h.Account, SessionID: h.Session, RunID: h.RunID.String(), Holder: h.Holder, Fence: h.Fence,
			AcquiredAt: timePtr(h.AcquiredAt), RenewedAt: timePtr(h.RenewedAt), ExpiresAt: timePtr(h.ExpiresAt),
			ExpiryKnown: h.ExpiryKnown, Expired: h.Expired,
		}
		if !h.ExpiresAt.IsZero() {
			left := h.ExpiresAt.Sub(o.At).Seconds()
			j.RemainingSeconds = &left
		}
		if h.TTL > 0 {
			ttl := h.TTL.Seconds()
			j.TTLSeconds = &ttl
		}
		dst = append(dst, j)
	}
	return dst
}

func writeOwnersText(w io.Writer, o data.OwnersAt) error {
	if _, err := fmt.Fprintln(w, asOfLine(o)); err != nil {
		return err
	}
	if len(o.Holdings) == 0 {
		_, err := fmt.Fprintln(w, "no leases held")
		return err
	}
	return writeColumns(w, append([][]string{ownerHeader}, ownerRows(nil, o)...))
}

// asOfLine says which instant ls --at shows, and since when the history is
// kept.
func asOfLine(o data.OwnersAt) string {
	return fmt.Sprintf("as of %s (history kept since %s)",
		o.At.UTC().Format("2006-01-02T15:04:05.000000Z"), o.HistoryStart.UTC().Format("2006-01-02T15:04:05.000000Z"))
}

// ownerHeader is the header of ls --at's table.
var ownerHeader = []string{"ACCOUNT", "SESSION", "HOLDER", "RUN", "FENCE", "TTL LEFT", "HELD FOR"}

// ownerRows appends o's rows of ls --at's table to dst.
func ownerRows(dst [][]string, o data.OwnersAt) [][]string {
	for _, h := range o.Holdings {
		dst = append(dst, []string{
			termtext.Mark(h.Account, 0), termtext.Mark(h.Session, 0), termtext.Mark(h.Holder, 0),
			h.RunID.String(), fmt.Sprint(h.Fence), ttlLeftAt(h, o.At), heldForAt(h, o),
		})
	}
	return dst
}

// ttlLeftAt is the TTL LEFT column as of at: exact, or "renewed, ≤ TTL"
// where renewals the history does not record leave it open.
func ttlLeftAt(h data.Holding, at time.Time) string {
	left := h.ExpiresAt.Sub(at)
	switch {
	case h.Expired && h.ExpiryKnown:
		return "expired " + (-left).Round(time.Second).String() + " ago"
	case h.Expired:
		return "expired"
	case h.ExpiryKnown:
		return left.Round(100 * time.Millisecond).String()
	case h.TTL > 0:
		return "renewed, ≤" + h.TTL.Round(100*time.Millisecond).String()
	}
	return "renewed"
}

// heldForAt is the HELD FOR column as of at; "≥" the known history where the
// span began before it.
func heldForAt(h data.Holding, o data.OwnersAt) string {
	if h.AcquiredAt.IsZero() {
		return "≥" + o.At.Sub(o.HistoryStart).Round(time.Second).String()
	}
	return o.At.Sub(h.AcquiredAt).Round(time.Second).String()
}
