package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/leasetop/leasetop/internal/demo/device"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/leasetop/leasetop/internal/data"
	"github.com/leasetop/leasetop/monitor"
)

// DeviceSource is the monitor's devices pane for this demo: what each device
// process last wrote about itself in leasetop_demo.device (and what the demo
// did to it), and its attempts from leasetop_demo.attempt. The monitor reads
// them from the database, as it would any multi-process system's; ctx
// bounds every read.
func (d *Demo) DeviceSource(ctx context.Context) monitor.DeviceSource {
	accounts := d.cfg.AccountIDs()
	return monitor.DeviceSource{
		ListFunc: func() ([]monitor.Device, error) {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return ReadDevices(rctx, d.store, accounts, false)
		},
		AttemptsFunc: func(dev monitor.Device) ([]monitor.Attempt, error) {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return ReadAttempts(rctx, d.store, dev.Account, dev.Name, 100)
		},
		Silent: 3 * device.StatusHeartbeat,
	}
}

// selectDevices reads the device processes of the given accounts, in the
// demo's order, newest process last.
const selectDevices = `
	SELECT account_id, device, pid, generation, started_at, status, reported_at, signal, signal_why, signal_at
	  FROM leasetop_demo.device WHERE account_id = ANY($1)
	 ORDER BY slot, account_id, device, started_at`

// ReadDevices reads the devices of accounts as the devices pane shows them:
// each device's latest process, or with all every process it has had.
func ReadDevices(ctx context.Context, store *data.Store, accounts []string, all bool) ([]monitor.Device, error) {
	rows, err := store.Pinned().Query(ctx, selectDevices, accounts)
	if err != nil {
		return nil, fmt.Errorf("read the devices: %w", data.Translate(err))
	}
	var out []monitor.Device
	var p processRow
	_, err = pgx.ForEachRow(rows, []any{&p.account, &p.name, &p.pid, &p.generation, &p.startedAt, &p.status,
		&p.reportedAt, &p.signal, &p.signalWhy, &p.signalAt}, func() error {
		d, err := p.device()
		if err != nil {
			return err
		}
		if n := len(out); !all && n > 0 && out[n-1].Account == d.Account && out[n-1].Name == d.Name {
			out[n-1] = d // a newer process of the same device
			return nil
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the devices: %w", data.Translate(err))
	}
	return out, nil
}

// processRow is one row of leasetop_demo.device.
type processRow struct {
	account, name     string
	pid, generation   int
	startedAt         time.Time
	status            []byte
	reportedAt        *time.Time
	signal, signalWhy *string
	signalAt          *time.Time
}

// device turns a process's row into what the pane shows.
func (p processRow) device() (monitor.Device, error) {
	d := monitor.Device{Account: p.account, Name: p.name, PID: p.pid, Holder: device.HolderLabel(p.name, p.pid),
		State: monitor.DeviceStarting, Since: p.startedAt, Reported: p.startedAt}
	if p.generation > 1 {
		d.State = monitor.DeviceRestarting
		d.Why = fmt.Sprintf("process %d of this device", p.generation)
	}
	if p.status != nil && p.reportedAt != nil {
		var st device.Status
		if err := json.Unmarshal(p.status, &st); err != nil {
			return d, fmt.Errorf("device %s pid %d: a status that is not one: %w", p.name, p.pid, err)
		}
		d.Reported = *p.reportedAt
		d.Holder = st.Holder
		d.Runs, d.Refusals, d.WritesAccepted, d.WritesRefused = st.Runs, st.Refusals, st.WritesAccepted, st.WritesRefused
		d.Preempts, d.Preempted, d.Joins, d.QueueWaits, d.HandOvers = st.Preempts, st.Preempted, st.Joins, st.QueueWaits, st.HandOvers
		d.State, d.Why = monitor.DeviceIdle, ""
		d.Since = d.Reported
		primary := -1
		for i, s := range st.Sessions {
			key := data.Key{Account: p.account, Session: s.Session}
			if s.State == monitor.DeviceHolding {
				d.Believes = append(d.Believes, monitor.Belief{Key: key, Run: s.Run, Fence: s.Fence, Since: d.Reported.Add(-s.Age)})
			}
			if primary < 0 || outranks(s, st.Sessions[primary]) {
				primary = i
			}
		}
		if primary >= 0 {
			s := st.Sessions[primary]
			d.State, d.Since, d.Key = s.State, d.Reported.Add(-s.Age), data.Key{Account: p.account, Session: s.Session}
			d.Run, d.Fence, d.Owner, d.Why, d.Attachment, d.Place = s.Run, s.Fence, s.Owner, s.Why, s.Attachment, s.Place
			d.AccountSlots, d.AccountUsed = s.Slots, s.Used
			if s.State == monitor.DeviceRefused || s.State == monitor.DeviceAsking {
				d.OwnerExpires = d.Reported.Add(s.OwnerLeft)
			}
		}
		if m := st.Sent; m != nil {
			d.Sent = &monitor.SentMessage{Key: data.Key{Account: p.account, Session: m.Session}, Kind: m.Kind, ID: m.ID, To: m.To,
				Where: m.Where, Run: m.Run, Fence: m.Fence, Carried: m.Carried, Since: d.Reported.Add(-m.Age)}
		}
		if st.Stopped {
			d.State, d.Since, d.Why = monitor.DeviceStopped, d.Reported, ""
		}
	}
	if p.signal != nil && p.signalAt != nil {
		why := ""
		if p.signalWhy != nil {
			why = *p.signalWhy
		}
		switch *p.signal {
		case "frozen": // until the demo records that it resumed it
			d.State, d.Since, d.Why = monitor.DeviceFrozen, *p.signalAt, why
		case "killed", "exited":
			d.State, d.Since, d.Why = monitor.DeviceKilled, *p.signalAt, why
		}
	}
	return d, nil
}

// rank orders a conversation's states for the one a device's row shows:
// what it holds first, then what happened to it when a conversation was
// busy (preempted, following, queued, preempting, waiting: the story the
// row tells), then what it tries, then what it lost or was refused.
var rank = map[monitor.DeviceState]int{
	monitor.DeviceHolding: 5, monitor.DevicePreempted: 4, monitor.DevicePreempting: 4, monitor.DeviceFollowing: 4,
	monitor.DeviceWaiting: 4, monitor.DeviceQueued: 4, monitor.DeviceAsking: 4, monitor.DeviceHandedOver: 4, monitor.DeviceCancelled: 4, monitor.DeviceTrying: 3, monitor.DeviceLost: 2, monitor.DeviceRefused: 1,
}

// outranks reports whether conversation state a is the one to show rather
// than b: the higher rank, then the more recent.
func outranks(a, b device.SessionStatus) bool {
	if rank[a.State] != rank[b.State] {
		return rank[a.State] > rank[b.State]
	}
	return a.Age < b.Age
}

// ReadAttempts reads a device's last n attempts (all its processes'),
// newest first.
func ReadAttempts(ctx context.Context, store *data.Store, account, name string, n int) ([]monitor.Attempt, error) {
	rows, err := store.Pinned().Query(ctx, `
		SELECT at, pid, coalesce(session_id, ''), action, run_id, coalesce(fence, 0), answer, ok
		  FROM leasetop_demo.attempt WHERE account_id = $1 AND device = $2
		 ORDER BY id DESC LIMIT $3`, account, name, n)
	if err != nil {
		return nil, fmt.Errorf("read the attempts: %w", data.Translate(err))
	}
	var out []monitor.Attempt
	var a monitor.Attempt
	var session string
	var run *uuid.UUID
	_, err = pgx.ForEachRow(rows, []any{&a.At, &a.PID, &session, &a.Action, &run, &a.Fence, &a.Answer, &a.OK}, func() error {
		got := a
		if session != "" {
			got.Key = data.Key{Account: account, Session: session}
		}
		if run != nil {
			got.Run = *run
		}
		out = append(out, got)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the attempts: %w", data.Translate(err))
	}
	return out, nil
}
