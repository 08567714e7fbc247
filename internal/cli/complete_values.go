package cli

import (
	"context"
	"flag"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/bench"
	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/internal/demo"
	"github.com/leasetop/leasetop/internal/demo/device"
	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/theme"
)

// flagValues is what completion offers for a flag's value.
type flagValues struct {
	fixed func() []string // a closed set, from where the command checks it
	// live reads the values from the database (what is typed of the value
	// is prefix).
	live func(ctx context.Context, env Env, line commandLine, prefix string) []string
	list bool // a comma-separated list: each item is completed
	// alone are values that stand alone, not as an item of a list.
	alone []string
	files bool // a path: without a candidate the shell completes file names
}

// valuesOf returns the values of command's flag f. The fixed sets come
// from the lists the commands check their flags against, so that they
// cannot drift apart; a flag that takes a comma list (listFlag) completes
// each item.
func valuesOf(command string, f *flag.Flag) flagValues {
	v := valuesByName(command, f.Name)
	switch f.Value.(type) {
	case *listFlag, *kindsFlag:
		v.list = true
	}
	return v
}

func valuesByName(command, name string) flagValues {
	switch command + " --" + name {
	case "run --on-busy":
		return flagValues{fixed: func() []string { return busyNames(func(b lease.OnBusy) bool { return b != lease.BusyJoin }) }}
	case "run --then":
		return flagValues{fixed: func() []string { return busyNames(lease.OnBusy.AskFallback) }}
	case "run --on-ask":
		return flagValues{fixed: func() []string { return []string{onAskDecline, onAskHandOver} }}
	case "run --on-ask-signal":
		return flagValues{fixed: askSignalNames}
	case "events --kind":
		return flagValues{fixed: func() []string { return kindStrings(eventKinds()) }}
	case "bench --only":
		return flagValues{fixed: bench.Names, list: true}
	case "demo --strategy":
		return flagValues{fixed: strategyNames, list: true, alone: []string{"classic", "all"}}
	case "demo --devices":
		return flagValues{fixed: demo.DefaultDevices, list: true}
	case "watch --config", "bench --plot":
		return flagValues{files: true}
	case "watch --theme", "demo --theme":
		return flagValues{fixed: theme.Names, files: true}
	}
	switch name {
	case "account":
		return flagValues{live: liveAccounts}
	case "session":
		return flagValues{live: liveSessions}
	case "context":
		// The hook for contexts from the config file: when the file names
		// connections, --context completes to their names here.
		return flagValues{fixed: configContexts}
	}
	return flagValues{}
}

// configContexts are the contexts the config file names: none yet (the
// file holds key bindings only).
func configContexts() []string { return nil }

// askSignalNames are the signals --on-ask-signal accepts, as SIGNAME.
func askSignalNames() []string {
	var out []string
	for name := range askSignals {
		out = append(out, "SIG"+name)
	}
	slices.Sort(out)
	return out
}

// strategyNames are the strategies --strategy's list may name.
func strategyNames() []string {
	var out []string
	for _, s := range device.DefaultMix() {
		out = append(out, s.String())
	}
	return out
}

// liveBound is how long a completion may spend on the database, connecting
// included: a shell waits for it at every tab.
const liveBound = 2 * time.Second

// readLive runs read on the command line's database (--dsn, else
// DATABASE_URL, else the PG* variables) in a read-only transaction with a
// statement timeout, within liveBound. Any failure gives no values.
func readLive(ctx context.Context, env Env, line commandLine, read func(ctx context.Context, tx pgx.Tx) ([]string, error)) []string {
	dsn := env.Getenv("DATABASE_URL")
	if v := line.given["dsn"]; len(v) > 0 && v[len(v)-1] != "" {
		dsn = v[len(v)-1]
	}
	cfg, err := data.ParseConnConfig(dsn)
	if err != nil {
		return nil
	}
	cfg.ConnectTimeout = min(cfg.ConnectTimeout, liveBound)
	cfg.RuntimeParams["application_name"] = "leasetop completion"
	ctx, cancel := context.WithTimeout(ctx, liveBound)
	defer cancel()
	conn, err := data.Connect(ctx, cfg)
	if err != nil {
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var out []string
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '1s'`); err != nil {
			return err
		}
		out, err = read(ctx, tx)
		return err
	})
	if err != nil {
		return nil
	}
	return out
}

// liveAccounts are the account ids of the database's leases.
func liveAccounts(ctx context.Context, env Env, line commandLine, prefix string) []string {
	return readLive(ctx, env, line, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		return data.AccountIDs(ctx, tx, prefix, maxCandidates)
	})
}

// liveSessions are the session ids of the database's leases: of the
// account the line names (the last --account, when it is one id), else of
// every account.
func liveSessions(ctx context.Context, env Env, line commandLine, prefix string) []string {
	account := ""
	if v := line.given["account"]; len(v) > 0 {
		account = v[len(v)-1]
	}
	if len(splitList(account)) != 1 {
		account = ""
	}
	return readLive(ctx, env, line, func(ctx context.Context, tx pgx.Tx) ([]string, error) {
		return data.SessionIDs(ctx, tx, account, prefix, maxCandidates)
	})
}

// splitList is a listFlag's items, without checking them.
func splitList(s string) []string {
	var l listFlag
	if s == "" || l.Set(s) != nil {
		return nil
	}
	return l
}

// busyNames returns the names of the busy strategies keep accepts, in
// lease.OnBusy's order.
func busyNames(keep func(lease.OnBusy) bool) []string {
	var names []string
	for _, b := range lease.BusyStrategies() {
		if keep(b) {
			names = append(names, b.String())
		}
	}
	return names
}
