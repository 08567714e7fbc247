package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/termtext"
)

// cmdLimit sets, lists and removes the limits of live runs per account or
// pool (sql/limits.sql): set and rm as lease_admin, ls as any lease role.
// Exit 0 done, 5 rm found no such limit, 1 error, 2 usage.
func cmdLimit(ctx context.Context, env Env, args []string) error {
	if len(args) == 0 {
		return usageErrorf("limit needs set, ls or rm (see leasetop limit -h)")
	}
	switch args[0] {
	case "set":
		return limitSet(ctx, env, args[1:])
	case "ls":
		return limitList(ctx, env, args[1:])
	case "rm":
		return limitRemove(ctx, env, args[1:])
	case "-h", "-help", "--help":
		fmt.Fprintln(env.Stdout, "Usage: leasetop limit set ACCOUNT [--pool P] N | limit ls [ACCOUNT] [--json] | limit rm ACCOUNT [--pool P]")
		return nil
	}
	return usageErrorf("limit: unknown subcommand %q: want set, ls or rm", termtext.Clean(args[0], 0))
}

// parseInterspersed parses fs's flags wherever they stand among args and
// returns the other arguments, in order.
func parseInterspersed(fs *flagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// limitSet is limit set ACCOUNT [--pool P] N.
func limitSet(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "limit set", "limit set ACCOUNT [--pool P] N [--dsn URL]")
	dsn := dsnFlag(fs)
	pool := fs.String("pool", "", "the pool within the account (default: the whole account)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErrorf("limit set needs ACCOUNT and N, got %d arguments", len(pos))
	}
	slots, err := strconv.Atoi(pos[1])
	if err != nil || slots < 0 || slots > data.MaxSlots {
		return usageErrorf("limit set: N must be a whole number from 0 to %d, got %q", data.MaxSlots, termtext.Clean(pos[1], 0))
	}
	if err := checkLimitTarget(pos[0], *pool); err != nil {
		return err
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	live, err := store.SetLimit(ctx, pos[0], *pool, slots)
	if err != nil {
		return connError(err)
	}
	fmt.Fprintf(env.Stdout, "limit of %s set to %d live %s (%d live now)\n", limitName(pos[0], *pool), slots, plural(slots, "run", "runs"), live)
	return nil
}

// limitRemove is limit rm ACCOUNT [--pool P].
func limitRemove(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "limit rm", "limit rm ACCOUNT [--pool P] [--dsn URL]")
	dsn := dsnFlag(fs)
	pool := fs.String("pool", "", "the pool within the account (default: the account's own limit)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("limit rm needs ACCOUNT, got %d arguments", len(pos))
	}
	if err := checkLimitTarget(pos[0], *pool); err != nil {
		return err
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	ok, err := store.RemoveLimit(ctx, pos[0], *pool)
	switch {
	case err != nil:
		return connError(err)
	case !ok:
		return &ExitError{Code: ExitNothing, Err: fmt.Errorf("nothing to remove: %s has no limit", limitName(pos[0], *pool))}
	}
	fmt.Fprintf(env.Stdout, "limit of %s removed\n", limitName(pos[0], *pool))
	return nil
}

// checkLimitTarget refuses an account or pool the schema would refuse.
func checkLimitTarget(account, pool string) error {
	if err := data.ValidateKey(data.Key{Account: account, Session: "-"}); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if err := data.ValidatePool(pool); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return nil
}

// limitName names a limit for a message: the account, or its pool.
func limitName(account, pool string) string {
	if pool == "" {
		return "account " + termtext.Clean(account, 0)
	}
	return "pool " + termtext.Quote(pool) + " of account " + termtext.Clean(account, 0)
}

// limitList is limit ls [ACCOUNT] [--json]: the limits fullest first
// (data.SortBySaturation).
func limitList(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "limit ls", "limit ls [ACCOUNT] [--json] [--dsn URL]")
	dsn := dsnFlag(fs)
	asJSON := fs.Bool("json", false, "print the limits as one JSON object")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErrorf("limit ls takes at most one ACCOUNT, got %d arguments", len(pos))
	}
	account := ""
	if len(pos) == 1 {
		account = pos[0]
		if err := checkLimitTarget(account, ""); err != nil {
			return err
		}
	}
	store, err := openStore(ctx, resolveDSN(env, *dsn))
	if err != nil {
		return err
	}
	defer store.Close()
	use, err := store.Limits(ctx, account)
	if err != nil {
		return connError(err)
	}
	data.SortBySaturation(use)
	if *asJSON {
		return writeLimitsJSON(env.Stdout, use)
	}
	return writeLimitsText(env.Stdout, use)
}

// limitJSON is one limit in limit ls --json.
type limitJSON struct {
	AccountID  string           `json:"account_id"`
	Pool       string           `json:"pool"` // "" the account's own limit
	Slots      int              `json:"slots"`
	Used       int              `json:"used"`
	Queued     int              `json:"queued"`     // live queue tickets in the account's sessions
	Saturation float64          `json:"saturation"` // used/slots: 1 full, above 1 after a lowered limit
	SetAt      time.Time        `json:"set_at"`
	SetBy      string           `json:"set_by"`
	Holders    []slotHolderJSON `json:"holders"`
}

// slotHolderJSON is one run holding a slot.
type slotHolderJSON struct {
	Slot      int     `json:"slot"`
	SessionID string  `json:"session_id"`
	RunID     string  `json:"run_id"`
	Holder    string  `json:"holder"`
	Remaining float64 `json:"remaining_seconds"`
}

// limitsJSON is use as limit ls --json and ls --json list it.
func limitsJSON(use []data.LimitUsage) []limitJSON {
	out := []limitJSON{}
	for _, u := range use {
		l := limitJSON{AccountID: u.Account, Pool: u.Pool, Slots: u.Slots, Used: u.Used, Queued: u.Queued,
			Saturation: u.Saturation(), SetAt: u.SetAt, SetBy: u.SetBy, Holders: []slotHolderJSON{}}
		for _, h := range u.Holders {
			l.Holders = append(l.Holders, slotHolderJSON{Slot: h.Slot, SessionID: h.Session, RunID: h.RunID.String(),
				Holder: h.Holder, Remaining: h.Remaining.Seconds()})
		}
		out = append(out, l)
	}
	return out
}

func writeLimitsJSON(w io.Writer, use []data.LimitUsage) error {
	out := struct {
		Limits []limitJSON `json:"limits"`
	}{Limits: limitsJSON(use)}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(termtext.JSON(b), '\n'))
	return err
}

func writeLimitsText(w io.Writer, use []data.LimitUsage) error {
	if len(use) == 0 {
		_, err := fmt.Fprintln(w, "no limits: every account may run any number of runs")
		return err
	}
	rows := [][]string{{"ACCOUNT", "POOL", "SLOTS", "QUEUED", "SATURATION", "HELD BY"}}
	for _, u := range use {
		pool := "-"
		if u.Pool != "" {
			pool = termtext.Mark(u.Pool, 0)
		}
		rows = append(rows, []string{termtext.Mark(u.Account, 0), pool, usageWords(u), strconv.Itoa(u.Queued),
			saturationWords(u), holderWords(u.Holders)})
	}
	return writeColumns(w, rows)
}

// usageWords says how full a limit is: "3/5 used".
func usageWords(u data.LimitUsage) string { return fmt.Sprintf("%d/%d used", u.Used, u.Slots) }

// saturationWords says how full a limit is in percent: "60%".
func saturationWords(u data.LimitUsage) string {
	return strconv.FormatFloat(u.Saturation()*100, 'f', 0, 64) + "%"
}

// holderWords names the sessions holding slots and for how long still.
func holderWords(hs []data.SlotHolder) string {
	if len(hs) == 0 {
		return "-"
	}
	words := make([]string, 0, len(hs))
	for _, h := range hs {
		words = append(words, fmt.Sprintf("%s (%s, %s)", termtext.Mark(h.Session, 0), termtext.Mark(h.Holder, 0),
			h.Remaining.Round(time.Second)))
	}
	return strings.Join(words, ", ")
}
