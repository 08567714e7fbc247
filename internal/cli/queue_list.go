package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// listQueue prints key's live tickets, head first: each waiter's label, run
// id, login, how long it has waited and when its ticket expires unless
// renewed, on the server clock.
func listQueue(ctx context.Context, env Env, store *data.Store, key data.Key, asJSON bool) error {
	q, err := store.QueueOf(ctx, key)
	if err != nil {
		return connError(err)
	}
	now, err := store.ServerTime(ctx)
	if err != nil {
		return connError(err)
	}
	if asJSON {
		return writeQueueJSON(env.Stdout, now, key, q)
	}
	return writeQueueText(env.Stdout, now, key, q)
}

// ticketJSON is one ticket in queue --json.
type ticketJSON struct {
	Position  int       `json:"position"` // 1 for the head
	RunID     string    `json:"run_id"`   // the waiter's public run id
	Holder    string    `json:"holder"`
	Login     string    `json:"login"` // the login role that took it
	JoinedAt  time.Time `json:"joined_at"`
	RenewedAt time.Time `json:"renewed_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func writeQueueJSON(w io.Writer, now time.Time, key data.Key, q []data.Ticket) error {
	out := struct {
		ServerTime time.Time    `json:"server_time"`
		AccountID  string       `json:"account_id"`
		SessionID  string       `json:"session_id"`
		Tickets    []ticketJSON `json:"tickets"`
	}{ServerTime: now, AccountID: key.Account, SessionID: key.Session, Tickets: []ticketJSON{}}
	for i, t := range q {
		out.Tickets = append(out.Tickets, ticketJSON{Position: i + 1, RunID: t.RunID.String(), Holder: t.Holder, Login: t.Login,
			JoinedAt: t.JoinedAt, RenewedAt: t.RenewedAt, ExpiresAt: t.ExpiresAt})
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termtext.JSON(b), '\n'))
	return err
}

func writeQueueText(w io.Writer, now time.Time, key data.Key, q []data.Ticket) error {
	if len(q) == 0 {
		_, err := fmt.Fprintf(w, "no queue: %s has no live ticket\n", termtext.Clean(key.String(), 0))
		return err
	}
	rows := [][]string{{"#", "HOLDER", "RUN", "LOGIN", "WAITED", "EXPIRES IN"}}
	for i, t := range q {
		rows = append(rows, []string{strconv.Itoa(i + 1), termtext.Mark(t.Holder, 0), t.RunID.String(), termtext.Mark(t.Login, 0),
			now.Sub(t.JoinedAt).Round(time.Second).String(), max(t.ExpiresAt.Sub(now), 0).Round(100 * time.Millisecond).String()})
	}
	return writeColumns(w, rows)
}
