package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// cmdLs prints every lease once, with the time left on the server clock.
// With --context, it lists the leases of several databases in one table
// (ls_contexts.go).
func cmdLs(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "ls", "ls [--at TIME] [--account A] [--session S] [--accounts] [--json] [--dsn URL | --context NAME...] [--config PATH]")
	dsn := dsnFlag(fs)
	contexts := addContextFlags(fs, nil)
	asJSON := fs.Bool("json", false, "print one JSON object: the server time and every lease")
	var at timeFlag
	var accounts, sessions listFlag
	fs.Var(&accounts, "account", "list only this account's leases (repeatable, or a comma list)")
	fs.Var(&sessions, "session", "list only the leases of sessions with this id (repeatable, or a comma list)")
	byAccount := fs.Bool("accounts", false, "list the accounts' limits instead of the leases: slots used, queued tickets, saturation and the sessions holding the slots, fullest first")
	fs.Var(&at, "at", "list who held what at TIME, rebuilt from the event history: RFC 3339 or a duration ago (\"10m ago\") on the database clock")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("ls takes no arguments, got %q", fs.Arg(0))
	}
	cs, err := contexts.resolve(env)
	if err != nil {
		return err
	}
	filter := data.HistoryFilter{Accounts: accounts, Sessions: sessions}
	if *byAccount {
		switch {
		case at.set:
			return usageErrorf("ls --accounts shows the limits now: drop --at")
		case len(sessions) > 0:
			return usageErrorf("ls --accounts lists accounts: drop --session")
		case cs != nil:
			return usageErrorf("ls --accounts reads one database: drop --context")
		}
	}
	if cs != nil {
		return lsContexts(ctx, env, cs, at, filter, *asJSON)
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	if at.set {
		return lsAt(ctx, env, store, at.timeArg, filter, *asJSON)
	}
	if *byAccount {
		return lsAccounts(ctx, env, store, accounts, *asJSON)
	}
	v, err := readLeases(ctx, store, filter)
	if err != nil {
		return connError(err)
	}
	if *asJSON {
		return writeLeasesJSON(env.Stdout, v)
	}
	return writeLeasesText(env.Stdout, v)
}

// lsAccounts is ls --accounts: every limit of the accounts listed (all
// when accounts is empty), fullest first, as limit ls prints them.
func lsAccounts(ctx context.Context, env Env, store *data.Store, accounts []string, asJSON bool) error {
	use, err := store.Limits(ctx, "")
	if err != nil {
		return connError(err)
	}
	use = slices.DeleteFunc(use, func(u data.LimitUsage) bool {
		return len(accounts) > 0 && !slices.Contains(accounts, u.Account)
	})
	data.SortBySaturation(use)
	if asJSON {
		return writeLimitsJSON(env.Stdout, use)
	}
	return writeLimitsText(env.Stdout, use)
}

// leasesView is what ls shows of one database: its leases sorted by key
// and its queues, with the server time they are measured against, and the
// asks to hand over pending on them.
type leasesView struct {
	now    time.Time
	leases []data.Lease
	queues map[data.Key]int
	asks   map[data.Key]data.PendingAsk
	limits []data.LimitUsage // the limits of the accounts listed, and their slots
}

// readLeases reads what ls shows of store's database, of the sessions f
// selects (its Accounts and Sessions).
func readLeases(ctx context.Context, store *data.Store, f data.HistoryFilter) (leasesView, error) {
	snap, err := store.Snapshot(ctx)
	if err != nil {
		return leasesView{}, err
	}
	skip := func(k data.Key) bool {
		return (len(f.Accounts) > 0 && !slices.Contains(f.Accounts, k.Account)) ||
			(len(f.Sessions) > 0 && !slices.Contains(f.Sessions, k.Session))
	}
	leases := slices.DeleteFunc(snap.Leases, func(l data.Lease) bool { return skip(l.Key) })
	slices.SortFunc(leases, func(a, b data.Lease) int { return compareKeys(a.Key, b.Key) })
	queues, err := store.QueueLengths(ctx)
	if err != nil {
		return leasesView{}, err
	}
	maps.DeleteFunc(queues, func(k data.Key, _ int) bool { return skip(k) })
	asks, err := store.PendingAsks(ctx)
	if err != nil {
		return leasesView{}, err
	}
	limits, err := store.Limits(ctx, "")
	if err != nil {
		return leasesView{}, err
	}
	limits = slices.DeleteFunc(limits, func(u data.LimitUsage) bool {
		return len(f.Accounts) > 0 && !slices.Contains(f.Accounts, u.Account)
	})
	return leasesView{now: snap.Clock.Now(), leases: leases, queues: queues, asks: asks, limits: limits}, nil
}

// leaseJSON is one lease in ls --json.
type leaseJSON struct {
	Context          string    `json:"context,omitempty"` // with --context: the database it is in
	AccountID        string    `json:"account_id"`
	SessionID        string    `json:"session_id"`
	RunID            string    `json:"run_id"`
	Holder           string    `json:"holder"`
	Fence            int64     `json:"fence"`
	AcquiredAt       time.Time `json:"acquired_at"`
	RenewedAt        time.Time `json:"renewed_at"`
	ExpiresAt        time.Time `json:"expires_at"`
	RemainingSeconds float64   `json:"remaining_seconds"` // negative once expired
	Expired          bool      `json:"expired"`           // expired and not taken over: a likely lost holder
	Preemptible      bool      `json:"preemptible"`       // false: the holder declared it must not be preempted
	Attachment       *string   `json:"attachment"`        // what the holder published (untrusted text), null for none
	QueueLength      int       `json:"queue_length"`      // live tickets in the session's queue
	PendingAsk       *askJSON  `json:"pending_ask,omitempty"`
}

// askJSON is the ask to hand over pending on a lease (ls --json).
type askJSON struct {
	RunID            string    `json:"run_id"` // the asker's public run id
	Holder           string    `json:"holder"` // the label it would hold the lease under
	Until            time.Time `json:"until"`
	RemainingSeconds float64   `json:"remaining_seconds"`
}

func writeLeasesJSON(w io.Writer, v leasesView) error {
	out := struct {
		ServerTime time.Time   `json:"server_time"`
		Leases     []leaseJSON `json:"leases"`
		Queues     []queueJSON `json:"queues"` // every session with a queue, held or not
		Limits     []limitJSON `json:"limits"` // every limit of the accounts listed, as limit ls --json has them
	}{ServerTime: v.now, Leases: leasesJSON(nil, v, ""), Queues: queuesJSON(nil, v.queues, ""), Limits: limitsJSON(v.limits)}
	return writeJSON(w, out)
}

// leasesJSON appends v's leases to dst as ls --json lists them, tagged with
// context when it is not "".
func leasesJSON(dst []leaseJSON, v leasesView, context string) []leaseJSON {
	if dst == nil {
		dst = []leaseJSON{}
	}
	for _, l := range v.leases {
		left := l.ExpiresAt.Sub(v.now)
		j := leaseJSON{
			Context:   context,
			AccountID: l.Account, SessionID: l.Session, RunID: l.RunID.String(), Holder: l.Holder, Fence: l.Fence,
			AcquiredAt: l.AcquiredAt, RenewedAt: l.RenewedAt, ExpiresAt: l.ExpiresAt,
			RemainingSeconds: left.Seconds(), Expired: left <= 0,
			Preemptible: !l.NotPreemptible, Attachment: nonEmpty(l.Attachment), QueueLength: v.queues[l.Key],
		}
		if a, ok := v.asks[l.Key]; ok && a.HolderRunID == l.RunID {
			j.PendingAsk = &askJSON{RunID: a.RunID.String(), Holder: a.Holder, Until: a.Until, RemainingSeconds: a.Remaining.Seconds()}
		}
		dst = append(dst, j)
	}
	return dst
}

// writeJSON writes v indented, with the characters a terminal would act on
// escaped (termtext.JSON).
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termtext.JSON(b), '\n'))
	return err
}

// nonEmpty is s, or nil (JSON null) for "".
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func writeLeasesText(w io.Writer, v leasesView) error {
	rows := leaseRows(nil, v)
	if len(rows) == 0 {
		if _, err := fmt.Fprintln(w, "no leases held"); err != nil {
			return err
		}
		return writeLimitLines(w, v.limits)
	}
	if err := writeColumns(w, append([][]string{leaseHeader}, rows...)); err != nil {
		return err
	}
	return writeLimitLines(w, v.limits)
}

// writeLimitLines says, under ls's table, how full each account's limit is
// and which sessions hold its slots: "limit of account acme: 3/5 used, 2
// queued: chat-1 (laptop, 12s), …".
func writeLimitLines(w io.Writer, limits []data.LimitUsage) error {
	for i, u := range limits {
		if i == 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "limit of %s: %s, %d queued: %s\n", limitName(u.Account, u.Pool), usageWords(u), u.Queued,
			holderWords(u.Holders)); err != nil {
			return err
		}
	}
	return nil
}

// leaseHeader is the header of ls's table.
var leaseHeader = []string{"ACCOUNT", "SESSION", "HOLDER", "RUN", "FENCE", "TTL LEFT", "HELD FOR", "WAITING"}

// leaseRows appends v's rows of ls's table to dst: its leases, then the
// free sessions with a queue.
func leaseRows(dst [][]string, v leasesView) [][]string {
	now := v.now
	for _, l := range v.leases {
		left := l.ExpiresAt.Sub(now)
		ttl := left.Round(100 * time.Millisecond).String()
		if left <= 0 {
			ttl = "expired " + (-left).Round(time.Second).String() + " ago"
		}
		var ask *data.PendingAsk
		if a, ok := v.asks[l.Key]; ok && a.HolderRunID == l.RunID {
			ask = &a
		}
		dst = append(dst, []string{
			termtext.Mark(l.Account, 0), termtext.Mark(l.Session, 0), termtext.Mark(l.Holder, 0),
			l.RunID.String(), fmt.Sprint(l.Fence), ttl, now.Sub(l.AcquiredAt).Round(time.Second).String(),
			waiting(v.queues[l.Key], ask),
		})
	}
	for _, k := range freeQueued(v.leases, v.queues) {
		dst = append(dst, []string{termtext.Mark(k.Account, 0), termtext.Mark(k.Session, 0), "", "free", "", "", "", waiting(v.queues[k], nil)})
	}
	return dst
}

// freeQueued are the sessions with a queue and no lease in leases (sorted by
// key), by key: their head is about to take the lease.
func freeQueued(leases []data.Lease, queues map[data.Key]int) []data.Key {
	var out []data.Key
	for k := range queues {
		if _, held := slices.BinarySearchFunc(leases, k, func(l data.Lease, k data.Key) int { return compareKeys(l.Key, k) }); !held {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, compareKeys)
	return out
}

// compareKeys orders keys by account, then session: ls's order.
func compareKeys(a, b data.Key) int {
	return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Session, b.Session))
}

// waiting is the WAITING column: the queue's length and the pending ask to
// hand over (its asker's label and time left), empty for neither.
func waiting(queued int, ask *data.PendingAsk) string {
	var parts []string
	if queued > 0 {
		parts = append(parts, fmt.Sprintf("%d queued", queued))
	}
	if ask != nil {
		parts = append(parts, fmt.Sprintf("ask by %s, %s left", termtext.Mark(ask.Holder, 0), ask.Remaining.Round(time.Second)))
	}
	return strings.Join(parts, "; ")
}

// writeColumns aligns cells by display width (tabwriter counts bytes).
func writeColumns(w io.Writer, rows [][]string) error {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)+2))
			}
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
