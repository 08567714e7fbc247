package monitor

// DeviceState is what a device is doing: as it says itself, or, for
// starting, restarting, frozen and killed, as the program that runs it
// says (a frozen or dead process cannot speak). Its values are also the
// words a device writes about itself (the demo's devices, as JSON in the
// database), so they do not change.
type DeviceState string

// The states of a device.
const (
	// DeviceStarting: started, not reporting yet.
	DeviceStarting DeviceState = "starting"
	// DeviceRestarting: started again after its previous process died.
	DeviceRestarting DeviceState = "restarting"
	// DeviceIdle: connected, holding nothing, trying nothing.
	DeviceIdle DeviceState = "idle"
	// DeviceTrying: asking the server for Key.
	DeviceTrying DeviceState = "trying"
	// DeviceHolding: it holds Key with Run and Fence.
	DeviceHolding DeviceState = "holding"
	// DeviceRefused: the server refused Key: Owner holds it until
	// OwnerExpires.
	DeviceRefused DeviceState = "refused"
	// DeviceWaiting: it waits for Key, which Owner holds; Why says why
	// when it is not a plain refusal (a preempt refused: the run is paying).
	// With AccountSlots set, Key was free and it waits for its account,
	// at its limit, instead.
	DeviceWaiting DeviceState = "waiting"
	// DevicePreempting: Key is busy and it preempts Owner's run (a new
	// message stops the run in progress).
	DevicePreempting DeviceState = "preempting"
	// DevicePreempted: Owner preempted its run of Key (Run, Fence); Why
	// says why.
	DevicePreempted DeviceState = "preempted"
	// DeviceFollowing: Key is busy and it joined Owner's run Run instead of
	// starting one, following the stream named by Attachment.
	DeviceFollowing DeviceState = "following"
	// DeviceQueued: it has a ticket in Key's queue, at Place (1: next),
	// while Owner holds Key; Why says why when a preempt was refused.
	DeviceQueued DeviceState = "queued"
	// DeviceAsking: Key is busy and it asked Owner to hand it over
	// ("continue on this device"); OwnerExpires is the ask's deadline.
	DeviceAsking DeviceState = "asking"
	// DeviceHandedOver: it handed Key's run (Run, Fence) over to Owner,
	// who asked for it.
	DeviceHandedOver DeviceState = "handed_over"
	// DeviceFrozen: the process is stopped (SIGSTOP); it still believes
	// what it believed.
	DeviceFrozen DeviceState = "frozen"
	// DeviceCancelled: a cancel message from Owner stopped its run of Key
	// (Run, Fence); it released the conversation.
	DeviceCancelled DeviceState = "cancelled"
	// DeviceLost: it lost Key's run; Why says how.
	DeviceLost DeviceState = "lost"
	// DeviceKilled: the process died; Why says how.
	DeviceKilled DeviceState = "killed"
	// DeviceStopped: it released what it held and exited.
	DeviceStopped DeviceState = "stopped"
)
