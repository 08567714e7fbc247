package device

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/audit"
	"github.com/leasetop/leasetop/lease"
)

// ReportKind says what happened to a device.
type ReportKind string

// The kinds of Report.
const (
	// ReportReady: the device is connected and its users start pressing send.
	ReportReady ReportKind = "ready"
	// ReportTrying: its user pressed send; it asks the server for Session.
	ReportTrying ReportKind = "trying"
	// ReportRefused: the lease is held by another run; Holder, OwnerRun and
	// Remaining say by whom and for how long still.
	ReportRefused ReportKind = "refused"
	// ReportWaiting: refused, its user chose to wait for the conversation
	// (lease.Client.Wait); Holder has it.
	ReportWaiting ReportKind = "waiting"
	// ReportGaveUp: its user stopped waiting after Waited.
	ReportGaveUp ReportKind = "gave_up"
	// ReportStarted: the device owns the conversation: Run, Fence, ExpiresAt;
	// Waited when it was granted at the end of a wait; Paying when it must
	// not be preempted; Holder when it preempted that holder's run;
	// Attachment the stream it writes to.
	ReportStarted ReportKind = "started"
	// ReportWrite: a chunk of output went through the fence check; Accepted
	// says whether it was written.
	ReportWrite ReportKind = "write"
	// ReportFrozen: the device noticed it had been frozen for Frozen while
	// it held Run, and its local safe deadline passed meanwhile: a zombie.
	ReportFrozen ReportKind = "frozen"
	// ReportLateRenewal: the zombie's late heartbeat; Accepted says whether
	// the database took it (it must not once the lease expired).
	ReportLateRenewal ReportKind = "late_renewal"
	// ReportEnded: the run ended; How is "released", "lost" or
	// "handed_over", Cause why; Holder the run that preempted it, or that it
	// handed the conversation over to, or that cancelled it (Cancelled).
	ReportEnded ReportKind = "ended"
	// ReportPreempting: busy, its user sent a new message: it preempts
	// Holder's run OwnerRun (fence Fence).
	ReportPreempting ReportKind = "preempting"
	// ReportPreemptRefused: the preempt was refused: Holder's run is paying
	// (not preemptible). Its user waits instead.
	ReportPreemptRefused ReportKind = "preempt_refused"
	// ReportFollowing: busy, it joins Holder's run OwnerRun instead of
	// starting one, following the stream named by Attachment.
	ReportFollowing ReportKind = "following"
	// ReportUnfollowed: it stopped following OwnerRun (the run ended, or
	// its user stopped watching) after Waited.
	ReportUnfollowed ReportKind = "unfollowed"
	// ReportQueued: busy, it took a ticket in the conversation's queue
	// (Holder has the conversation): Place is its place (1: next); again
	// when its place changes. Cause says why when it queues after a
	// preempt was refused.
	ReportQueued ReportKind = "queued"
	// ReportAsking: busy, it asked Holder (run OwnerRun) to hand the
	// conversation over ("continue on this device"); the ask is pending for
	// Remaining.
	ReportAsking ReportKind = "asking"
	// ReportAskEnded: its ask ended after Waited: How is handed_over,
	// declined, expired or busy (another device's ask was pending); when it
	// did not get the conversation, Strategy is the fallback it runs next.
	ReportAskEnded ReportKind = "ask_ended"
	// ReportAnswered: the holder's side: Holder asked for Run; How is
	// declined (a paying run keeps its conversation) or expired (it answered
	// too late); Err what the database said.
	ReportAnswered ReportKind = "answered"
	// ReportSent: busy, its user sent a message to the conversation instead
	// of starting a run (the steer strategy): Message is its kind (steer
	// or cancel), MessageID its id, Holder and OwnerRun the run that held
	// the conversation when it was sent.
	ReportSent ReportKind = "sent"
	// ReportLanded: where the message MessageID it sent is now: How is
	// delivered (to Run at Fence; Carried when that is not the run it was
	// sent to), acked (by Run at Fence) or expired; again as it moves on.
	ReportLanded ReportKind = "landed"
	// ReportReceived: the holder's side: its run Run received message
	// MessageID (kind Message) from Holder; OwnerRun is the run it was
	// carried from, when it was delivered to another run first.
	ReportReceived ReportKind = "received"
	// ReportAcked: the holder's side: its run Run (fence Fence)
	// acknowledged message MessageID (a cancel: the library did, and the
	// run stops).
	ReportAcked ReportKind = "acked"
	// ReportError: something failed that the device survives (Err).
	ReportError ReportKind = "error"
)

// How a run ended, in ReportEnded: the words the invariant check reads in
// its Record.
const (
	EndReleased = audit.EndReleased
	EndLost     = audit.EndLost
	// EndHandedOver: the run handed the conversation over to the device
	// that asked for it (Holder).
	EndHandedOver = audit.EndHandedOver
)

// Report is one line a device prints on stdout: one thing that happened to
// it. Text fields hold what the database said (holder labels, errors) and are
// untrusted: sanitize them before printing.
type Report struct {
	Kind      ReportKind    `json:"t"`
	Session   string        `json:"session,omitempty"`
	Run       uuid.UUID     `json:"run,omitzero"`
	Fence     int64         `json:"fence,omitempty"`
	ExpiresAt time.Time     `json:"expires_at,omitzero"`
	Holder    string        `json:"holder,omitempty"`
	OwnerRun  uuid.UUID     `json:"owner_run,omitzero"`
	Remaining time.Duration `json:"remaining,omitempty"`
	Frozen    time.Duration `json:"frozen,omitempty"`
	Waited    time.Duration `json:"waited,omitempty"`
	Accepted  bool          `json:"accepted,omitempty"`
	How       string        `json:"how,omitempty"`
	Cause     string        `json:"cause,omitempty"`
	Err       string        `json:"err,omitempty"`
	PID       int           `json:"pid,omitempty"`
	// Strategy is what the press chose (trying).
	Strategy   lease.OnBusy `json:"strategy,omitempty"`
	Paying     bool         `json:"paying,omitempty"`
	Attachment string       `json:"attachment,omitempty"`
	// Place in a queue (queued); Queued: the run was granted, or the user
	// gave up, at the end of a queue wait.
	Place  int  `json:"place,omitempty"`
	Queued bool `json:"queued,omitempty"`
	// HandedBy is the holder that handed the run over to this device
	// (started).
	HandedBy string `json:"handed_by,omitempty"`
	// Slots and Used: the conversation was free but its account was at
	// its limit (refused, waiting): Used of its Slots live runs.
	Slots int `json:"slots,omitempty"`
	Used  int `json:"used,omitempty"`
	// Message is a message's kind (sent, received), MessageID its id;
	// Carried: the run it landed at is not the one it was sent to
	// (landed); Cancelled: a cancel message stopped the run (ended).
	Message   lease.MessageKind `json:"message,omitempty"`
	MessageID int64             `json:"message_id,omitempty"`
	Carried   bool              `json:"carried,omitempty"`
	Cancelled bool              `json:"cancelled,omitempty"`
}

// MaxReportLine bounds one report line.
const MaxReportLine = 64 << 10

// ErrBadReport is returned by DecodeReport for a line that is not a report.
var ErrBadReport = errors.New("not a device report")

// DecodeReport parses one line of a device's output.
func DecodeReport(line []byte) (Report, error) {
	var r Report
	if len(line) > MaxReportLine {
		return r, fmt.Errorf("%w: %d bytes", ErrBadReport, len(line))
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("%w: %v", ErrBadReport, err)
	}
	switch r.Kind {
	case ReportReady, ReportTrying, ReportRefused, ReportWaiting, ReportGaveUp, ReportStarted, ReportWrite,
		ReportFrozen, ReportLateRenewal, ReportEnded, ReportError,
		ReportPreempting, ReportPreemptRefused, ReportFollowing, ReportUnfollowed, ReportQueued,
		ReportAsking, ReportAskEnded, ReportAnswered, ReportSent, ReportLanded, ReportReceived, ReportAcked:
		return r, nil
	}
	return r, fmt.Errorf("%w: unknown kind %q", ErrBadReport, truncate(string(r.Kind), 32))
}

// reporter writes reports as JSON lines and hands each to observe (the
// device's status in the database); it is safe for concurrent use.
type reporter struct {
	mu      sync.Mutex
	enc     *json.Encoder
	observe func(Report)
}

func newReporter(w io.Writer, observe func(Report)) *reporter {
	return &reporter{enc: json.NewEncoder(w), observe: observe}
}

// report writes r; a broken pipe (the demo is gone) is not the device's
// problem to report.
func (p *reporter) report(r Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.enc.Encode(r)
	if p.observe != nil {
		p.observe(r)
	}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
