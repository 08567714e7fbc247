// Package cli implements leasetop's subcommands. Each command lives in its own
// file (flags, wiring, output); the protocol is in data/ and lease/, the
// screens in ui/.
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/leasetop/leasetop/internal/supervise"
)

// Env is everything a command may touch of its process.
type Env struct {
	Args   []string
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer

	// describe, when set, receives a command's flags in place of parsing
	// them (parseFlags then returns flag.ErrHelp): how completion learns
	// each command's flags from the command itself.
	describe func(*flag.FlagSet)
}

type command struct {
	name    string
	summary string
	hidden  bool
	// ownSignals: the command handles SIGINT, SIGTERM and SIGHUP itself
	// (run forwards them to its command; the demo's failed invariant
	// outranks them; they are the exporter's normal stop). Otherwise Run
	// ends its context on one and it exits as Interrupted.
	ownSignals bool
	run        func(ctx context.Context, env Env, args []string) error
}

func commands() []command {
	return []command{
		{name: "watch", summary: "open the live monitor (the default command)", run: cmdWatch},
		{name: "demo", summary: "start a throwaway PostgreSQL and devices contending for conversations, and watch them", ownSignals: true, run: cmdDemo},
		{name: "migrate", summary: "create or upgrade the lease schema, functions, triggers and roles", run: cmdMigrate},
		{name: "maintain", summary: "keep the history's daily partitions: make them ahead, drop days past --keep (cron)", run: cmdMaintain},
		{name: "run", summary: "run a command only while holding a session's lease (like consul lock)", ownSignals: true, run: cmdRun},
		{name: "ls", summary: "list live leases once, with remaining TTL on the server clock and who waits", run: cmdLs},
		{name: "events", summary: "print the event history, then follow it live", run: cmdEvents},
		{name: "release", summary: "force-release a session's lease (compare-and-release on --run)", run: cmdRelease},
		{name: "queue", summary: "show a session's queue of waiters, or clear one ticket or all (--clear)", run: cmdQueue},
		{name: "limit", summary: "set, list or remove an account's limit of live runs (set and rm as lease_admin)", run: cmdLimit},
		{name: "send", summary: "send a message (a steer, or --cancel) to the run holding a conversation", run: cmdSend},
		{name: "inbox", summary: "in a run's command: print its conversation's next message and acknowledge it", run: cmdInbox},
		{name: "follow", summary: "print a conversation's runs and attachments as they change, as JSON lines", run: cmdFollow},
		{name: "exporter", summary: "serve Prometheus metrics of the leases, events and feed (/metrics)", ownSignals: true, run: cmdExporter},
		{name: "version", summary: "print leasetop's version and the lease schema it migrates to; with --dsn, the database's", run: cmdVersion},
		{name: "completion", summary: "print a shell completion script (bash, zsh or fish) that also completes ids from the database", run: cmdCompletion},
		{name: "bench", summary: "measure the lease's cost against baselines in the same run", run: cmdBench},
		{name: completeCommand, summary: "the candidates for the word under the cursor (the completion scripts call it)", hidden: true, run: cmdComplete},
		{name: "device", summary: "one simulated device process of the demo", hidden: true, ownSignals: true, run: cmdDevice},
		{name: supervise.GuardianCommand, summary: "the guardian of leasetop run's command (internal)", hidden: true, ownSignals: true, run: cmdRunGuardian},
	}
}

// Run runs the subcommand named by env.Args[0]; no subcommand opens the
// monitor.
func Run(ctx context.Context, env Env) error {
	args := env.Args
	if len(args) > 0 {
		switch args[0] {
		case "help", "-h", "-help", "--help":
			return help(ctx, env, args[1:])
		case "--version", "-version":
			args = append([]string{"version"}, args[1:]...)
		}
	}
	name := "watch" // no command, or flags only: the monitor
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	c, ok := lookup(name)
	if !ok {
		return usageErrorf("unknown command %q: run leasetop help", name)
	}
	return c.start(ctx, env, args)
}

// start runs c under the rule for SIGINT, SIGTERM and SIGHUP: the first one
// ends ctx, and once c has cleaned up and returned, it exits as Interrupted
// (128+N). A command with ownSignals decides for itself.
func (c command) start(ctx context.Context, env Env, args []string) error {
	if c.ownSignals {
		return c.run(ctx, env, args)
	}
	ctx, stop := withInterrupts(ctx)
	defer stop()
	return interrupted(ctx, c.run(ctx, env, args))
}

// lookup finds a command by name, hidden ones too.
func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// help prints the commands (leasetop help, -h, --help) or one command's
// flags (leasetop help COMMAND, the same as leasetop COMMAND -h).
func help(ctx context.Context, env Env, args []string) error {
	switch {
	case len(args) == 0 || (len(args) == 1 && args[0] == "help"):
		usage(env.Stdout)
		return nil
	case len(args) == 1:
		c, ok := lookup(args[0])
		if !ok {
			return usageErrorf("help: unknown command %q: run leasetop help", args[0])
		}
		return c.run(ctx, env, []string{"-h"})
	}
	return usageErrorf("help takes at most one command, got %q", strings.Join(args, " "))
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "leasetop: who owns each session, and for how long — leases in PostgreSQL.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: leasetop [command] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	var shown []command
	width := 0
	for _, c := range commands() {
		if !c.hidden {
			shown = append(shown, c)
			width = max(width, len(c.name))
		}
	}
	for _, c := range shown {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The database comes from --dsn, else DATABASE_URL, else the libpq PG* variables.")
	fmt.Fprintln(w, "Commands that follow events LISTEN on --listen-dsn, else LEASETOP_LISTEN_DSN, else the same connection,")
	fmt.Fprintln(w, "or poll with --poll; where LISTEN cannot work (a standby, a transaction pooler) they poll by themselves.")
	fmt.Fprintln(w, "Run leasetop help COMMAND (or leasetop COMMAND -h) for a command's flags.")
}
