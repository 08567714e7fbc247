// Package demo is `leasetop demo`: independent device processes contend for
// the same conversations through the lease protocol, a seeded chaos schedule
// kills, freezes and force-releases them, and a checker proves from the
// database afterwards that the lease kept its promises.
//
// # Processes
//
//	leasetop demo ──spawns──▶ leasetop device (desktop, acme)  ─┐
//	      │                   leasetop device (browser, acme)  ─┤ each its own
//	      │                   leasetop device (phone, acme) ... ─┤ connection pool
//	      ▼                                                      ▼
//	  monitor.Feed ◀──NOTIFY lease_events── PostgreSQL (lease.*, leasetop_demo.output)
//
// Every device is an OS process (the demo re-executes its own binary as the
// hidden `leasetop device` subcommand, whose program is package device;
// this package is its runner) with its own database connections, so
// nothing in memory can coordinate them: only the lease does. A device is one
// device of one account (its user's desktop app, browser or phone) with each
// of that account's conversations open. For each conversation its user presses
// send at random moments; the device authorizes, then tries once to acquire
// the conversation's lease with a fresh run id. Granted, it runs a simulated
// model/tool execution in chunks, heartbeating through the lease library, and
// writes each chunk's output to leasetop_demo.output through the fence check.
// Refused, it reports who owns the conversation and for how long still: its
// local "send" button reconciled with the server's authority.
//
// Devices print one JSON line per happening on stdout (device.Report); the demo
// reads them for the event stream and the summary. The database is the
// authority for the invariants; the devices' words only add what the
// database cannot know (refusals, and which runs a killed process held).
//
// # Devices pane
//
// Each device also keeps what it believes in the demo's own tables:
// leasetop_demo.device, one row per process (each open conversation's
// state: idle, trying, holding with run and fence, refused with the owner
// and its time left, waiting, lost and why; its counters), rewritten after
// each happening and at least every second, and leasetop_demo.attempt, what
// it asked the server and the answer. The demo adds only what a process
// cannot say itself: that it started one, froze, resumed or killed it, or
// how it exited. The monitor's devices pane (DeviceSource) reads these
// tables like any other program's, never the pipes, and sets each device's
// beliefs beside the lease table it mirrors; the headless summary lists
// every process from them too. A refused user sometimes waits for the
// conversation (lease.Client.Wait) instead of pressing send again later.
//
// # Chaos
//
// A seeded schedule (Schedule) picks, every couple of TTLs, one of: kill -9 a
// device that holds a run (its lease expires; another device takes over),
// SIGSTOP a holding device for longer than the TTL and SIGCONT it (a zombie),
// or force-release a held conversation. Dead devices are restarted so the show
// goes on.
//
// A resumed zombie behaves like a naive client that did not look at its lease
// before acting: it sends its late heartbeat straight to lease.renew, and it
// attempts the write it was about to make. The lease library itself would do
// neither (its local safe deadline passed while the process was frozen); the
// device does both on purpose, to show the database's second line of
// defence: the renewal is rejected (a renew_rejected event) and the write is
// refused by the fence check.
//
// # Invariants
//
// After the run, audit.Check reads lease.event and leasetop_demo.output
// and verifies:
//
//  1. never two unexpired owners of one session on the server clock;
//  2. fences rise per session;
//  3. no write with a stale fence was accepted;
//  4. every started run ended (released, lost, or killed).
//
// The checker is a package of its own (internal/audit) because the fault
// suite checks its own holders' histories with it; the demo gives it the
// Record of what its devices said and what its chaos did.
package demo
