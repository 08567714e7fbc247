package demo

import (
	"context"
	"time"
)

// What the demo says about its device processes in leasetop_demo.device,
// beside what each says about itself: each new process (its place in the
// list, and how many processes that device has had), and what the demo did
// to one or how it ended, which a stopped or dead process cannot say. Each
// is also a line of the device's attempts.
const (
	recordProcess = `
		INSERT INTO leasetop_demo.device (account_id, device, pid, slot, generation)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (account_id, device, pid) DO UPDATE SET slot = EXCLUDED.slot, generation = EXCLUDED.generation`
	recordSignal = `
		WITH signalled AS (
		    UPDATE leasetop_demo.device SET signal = $4, signal_why = NULLIF($5, ''), signal_at = clock_timestamp()
		     WHERE account_id = $1 AND device = $2 AND pid = $3)
		INSERT INTO leasetop_demo.attempt (account_id, device, pid, at, action, answer, ok)
		VALUES ($1, $2, $3, clock_timestamp(), 'signal', $6, true)`
)

// recordTimeout bounds one of the demo's writes about a process: the
// devices pane is a view, and the demo's loop must not wait on it.
const recordTimeout = time.Second

// recordStart records a process the demo just started.
func (r *runner) recordStart(ctx context.Context, p *proc) {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	_, _ = r.store.Pinned().Exec(ctx, recordProcess, p.account, p.name, p.pid, p.idx, p.gen)
}

// recordSignal records what the demo did to p (signal: frozen, resumed,
// killed) or how it ended (exited); why is shown with the state, answer in
// the device's attempts.
func (r *runner) recordSignal(ctx context.Context, p *proc, signal, why, answer string) {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	_, _ = r.store.Pinned().Exec(ctx, recordSignal, p.account, p.name, p.pid, signal, why, answer)
}
