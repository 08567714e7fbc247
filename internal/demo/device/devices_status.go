package device

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/lease"
	"github.com/leasetop/leasetop/monitor"
)

// Status is what a device process says about itself, as JSON in
// leasetop_demo.device.status. Times are ages as of the write, so that the
// reader places them on the server's clock (reported_at minus the age)
// whatever the device's own clock says.
type Status struct {
	Holder         string          `json:"holder"`
	Stopped        bool            `json:"stopped,omitempty"`
	Sessions       []SessionStatus `json:"sessions"`
	Runs           int             `json:"runs"`
	Refusals       int             `json:"refusals"`
	WritesAccepted int             `json:"writes_accepted"`
	WritesRefused  int             `json:"writes_refused"`
	Preempts       int             `json:"preempts,omitempty"`
	Preempted      int             `json:"preempted,omitempty"`
	Joins          int             `json:"joins,omitempty"`
	QueueWaits     int             `json:"queue_waits,omitempty"`
	HandOvers      int             `json:"hand_overs,omitempty"`
	// Sent is the last message it sent and where it landed.
	Sent *SentStatus `json:"sent,omitempty"`
}

// SessionStatus is one open conversation's state on the device.
type SessionStatus struct {
	Session string              `json:"session"`
	State   monitor.DeviceState `json:"state"`
	// Age is how long it has been in State.
	Age   time.Duration `json:"age"`
	Run   uuid.UUID     `json:"run,omitzero"`
	Fence int64         `json:"fence,omitempty"`
	// Owner has the conversation (refused, waiting); OwnerLeft is how long
	// its lease still had, as the refusal said, at the write.
	Owner     string        `json:"owner,omitempty"`
	OwnerLeft time.Duration `json:"owner_left,omitempty"`
	Why       string        `json:"why,omitempty"`
	// Attachment is the stream the run writes (holding) or the run it
	// follows writes (following).
	Attachment string `json:"attachment,omitempty"`
	Place      int    `json:"place,omitempty"`
	// Slots and Used: the conversation was free but its account was at
	// its limit (refused, waiting): Used of its Slots live runs.
	Slots int `json:"slots,omitempty"`
	Used  int `json:"used,omitempty"`
}

// attemptRow is one line of leasetop_demo.attempt: what the device asked
// and the server's answer; Age places it on the server's clock.
type attemptRow struct {
	at      time.Time // local, for Age
	session string
	action  string
	run     uuid.UUID
	fence   int64
	answer  string
	ok      bool
}

// sessionState is a conversation's state as the tracker keeps it: times on
// the local monotonic clock.
type sessionState struct {
	state      monitor.DeviceState
	since      time.Time
	run        uuid.UUID
	fence      int64
	owner      string
	ownerUntil time.Time
	why        string
	attachment string
	place      int
	slots      int
	used       int
}

// tracker folds a device's reports into its status and the attempts to
// log. It is not safe for concurrent use (statusWriter locks it).
type tracker struct {
	holder   string
	stopped  bool
	sessions map[string]*sessionState
	order    []string
	counts   Status // only the counters are used
	sent     *sentState
	attempts []attemptRow
}

// maxPendingAttempts bounds the attempts kept while the database does not
// take them.
const maxPendingAttempts = 200

func newTracker(holder string, sessions []string, now time.Time) *tracker {
	t := &tracker{holder: holder, sessions: map[string]*sessionState{}, order: sessions}
	for _, s := range sessions {
		t.sessions[s] = &sessionState{state: monitor.DeviceIdle, since: now}
	}
	return t
}

// apply folds one report in at now.
func (t *tracker) apply(r Report, now time.Time) {
	s := t.sessions[r.Session]
	if s == nil && r.Session != "" {
		s = &sessionState{}
		t.sessions[r.Session] = s
		t.order = append(t.order, r.Session)
	}
	if s == nil {
		s = &sessionState{} // a report about no conversation changes none
	}
	set := func(st sessionState) { st.since = now; *s = st }
	log := func(action string, ok bool, answer string, args ...any) {
		t.attempts = append(t.attempts, attemptRow{at: now, session: r.Session, action: action, run: r.Run, fence: r.Fence,
			answer: fmt.Sprintf(answer, args...), ok: ok})
		if n := len(t.attempts); n > maxPendingAttempts {
			t.attempts = slices.Delete(t.attempts, 0, n-maxPendingAttempts)
		}
	}
	if t.applyInbox(r, s, set, log, now) || t.applyBusy(r, s, set, log, now) {
		return
	}
	switch r.Kind {
	case ReportTrying:
		set(sessionState{state: monitor.DeviceTrying})
	case ReportRefused:
		t.counts.Refusals++
		set(sessionState{state: monitor.DeviceRefused, owner: r.Holder, ownerUntil: now.Add(r.Remaining)})
		log("acquire", false, "busy: %s has it, %s left", r.Holder, r.Remaining.Round(100*time.Millisecond))
	case ReportWaiting:
		set(sessionState{state: monitor.DeviceWaiting, owner: r.Holder, why: r.Cause})
	case ReportStarted:
		t.applyStarted(r, set, log)
	case ReportWrite:
		if r.Accepted {
			t.counts.WritesAccepted++
			log("write", true, "accepted by the fence check")
		} else {
			t.counts.WritesRefused++
			log("write", false, "refused by the fence check: fence %d is stale", r.Fence)
		}
	case ReportFrozen:
		log("resume", false, "was frozen %s holding fence %d; acts before checking its lease", r.Frozen.Round(100*time.Millisecond), r.Fence)
	case ReportLateRenewal:
		if r.Accepted {
			log("renew", true, "accepted: the lease had not expired yet")
		} else {
			log("renew", false, "rejected: the lease is not its any more (a zombie's renewal)")
		}
	case ReportEnded:
		t.applyEnded(r, set, log)
	case ReportError:
		log("error", false, "%s", r.Err)
	}
}

// status is the device's status at now, and the attempts not logged yet
// (taken: the caller logs them).
func (t *tracker) status(now time.Time) (Status, []attemptRow) {
	st := t.counts
	st.Holder, st.Stopped = t.holder, t.stopped
	for _, name := range t.order {
		s := t.sessions[name]
		ss := SessionStatus{Session: name, State: s.state, Age: now.Sub(s.since), Run: s.run, Fence: s.fence, Owner: s.owner, Why: s.why,
			Attachment: s.attachment, Place: s.place, Slots: s.slots, Used: s.used}
		if s.state == monitor.DeviceRefused || s.state == monitor.DeviceAsking {
			ss.OwnerLeft = s.ownerUntil.Sub(now)
		}
		st.Sessions = append(st.Sessions, ss)
	}
	if t.sent != nil {
		sent := t.sent.SentStatus
		sent.Age = now.Sub(t.sent.since)
		st.Sent = &sent
	}
	attempts := t.attempts
	t.attempts = nil
	return st, attempts
}

// applyStarted applies a run's start: a grant, a preempt's, a turn in the
// queue, a wait's or a hand-over to this device.
func (t *tracker) applyStarted(r Report, set func(sessionState), log func(string, bool, string, ...any)) {
	t.counts.Runs++
	st := sessionState{state: monitor.DeviceHolding, run: r.Run, fence: r.Fence, attachment: r.Attachment}
	switch {
	case r.HandedBy != "":
		t.counts.HandOvers++
		st.why = "handed over by " + r.HandedBy
	case r.Holder != "":
		t.counts.Preempts++
		st.why = "preempted " + r.Holder
	case r.Paying:
		st.why = "paying, not preemptible"
	}
	set(st)
	switch {
	case r.HandedBy != "":
		log("ask", true, "handed over by %s: fence %d", r.HandedBy, r.Fence)
	case r.Holder != "":
		log("preempt", true, "granted: fence %d, %s's run stopped", r.Fence, r.Holder)
	case r.Queued:
		log("queue", true, "its turn after %s: fence %d", r.Waited.Round(100*time.Millisecond), r.Fence)
	case r.Waited > 0:
		log("wait", true, "granted after %s: fence %d", r.Waited.Round(100*time.Millisecond), r.Fence)
	default:
		log("acquire", true, "granted: fence %d", r.Fence)
	}
}

// applyEnded applies a run's end: handed over, preempted, lost or
// released.
func (t *tracker) applyEnded(r Report, set func(sessionState), log func(string, bool, string, ...any)) {
	switch {
	case r.How == EndHandedOver:
		t.counts.HandOvers++
		set(sessionState{state: monitor.DeviceHandedOver, run: r.Run, fence: r.Fence, owner: r.Holder})
		log("hand over", true, "handed over to %s, who asked", r.Holder)
	case r.How == EndLost && r.Holder != "":
		t.counts.Preempted++
		set(sessionState{state: monitor.DevicePreempted, run: r.Run, fence: r.Fence, owner: r.Holder, why: r.Cause})
		log("release", false, "lost before it ended: %s", r.Cause)
	case r.How == EndLost:
		set(sessionState{state: monitor.DeviceLost, run: r.Run, fence: r.Fence, why: r.Cause})
		log("release", false, "lost before it ended: %s", r.Cause)
	default:
		set(sessionState{state: monitor.DeviceIdle})
		log("release", true, "released")
	}
}

// FallbackText names a fallback strategy in an attempt's answer.
func FallbackText(s lease.OnBusy) string {
	if s == lease.BusyRefuse {
		return "nothing (gives up)"
	}
	return s.String()
}

// shortID is a run id's first 8 hex digits.
func shortID(id uuid.UUID) string { return id.String()[:8] }

// errSuffix is ": err", or "" without one.
func errSuffix(err string) string {
	if err == "" {
		return ""
	}
	return ": " + err
}
