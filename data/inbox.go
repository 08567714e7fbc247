package data

import impl "github.com/leasetop/leasetop/internal/data"

// MessageKind is what a message to a conversation asks of the run that
// holds it: MessageSteer or MessageCancel (lease.Message.Kind).
type MessageKind = impl.MessageKind

// The kinds of message.
const (
	// MessageSteer is text for the run's next turn.
	MessageSteer = impl.MessageSteer
	// MessageCancel asks the run to stop.
	MessageCancel = impl.MessageCancel
)

// MessageState is where a message is: MessageWaiting, MessageDelivered,
// MessageAcked or MessageExpired (lease.Client.SendWait and WaitMessage).
type MessageState = impl.MessageState

// The states of a message.
const (
	MessageWaiting   = impl.MessageWaiting   // sent, not delivered to any run yet
	MessageDelivered = impl.MessageDelivered // delivered to a run, not acknowledged
	MessageAcked     = impl.MessageAcked     // acknowledged by a run: final
	MessageExpired   = impl.MessageExpired   // not acknowledged before its expiry: final
)

// MessageStatus is a message's id, kind, state and the run it went to, as
// lease.send_message and lease.message_state answer (lease.Client.Send).
type MessageStatus = impl.MessageStatus

// Inbox is one conversation's live messages: how many, how many no run
// received yet, and the oldest one's age (the monitor's INBOX column).
type Inbox = impl.Inbox

// Bounds of the inbox, enforced by the schema.
const (
	// MaxMessageBytes bounds a message's body: one line of text.
	MaxMessageBytes = impl.MaxMessageBytes
	// MessageLimit is the most live messages a conversation's inbox holds.
	MessageLimit = impl.MessageLimit
)

// Errors of a send (lease.Client.Send).
var (
	// ErrMessageKeyReused: the idempotency key names another message of
	// the conversation already (another kind or body); nothing was sent.
	ErrMessageKeyReused = impl.ErrMessageKeyReused
	// ErrInboxFull: the conversation's inbox holds MessageLimit live
	// messages; nothing was sent.
	ErrInboxFull = impl.ErrInboxFull
	// ErrInboxShareFull: this login has sent as many of the inbox's (or of
	// every inbox's) live messages as one login may; errors.Is it
	// ErrInboxFull too.
	ErrInboxShareFull = impl.ErrInboxShareFull
)
