// Package device is the demo's device process, the hidden `leasetop device`
// subcommand the demo starts once per device and account (Run): one device
// of one account's user (desktop, browser or phone) with some of that
// account's conversations open. For each conversation its user presses send
// at random moments; the device tries to acquire the conversation's lease,
// runs a simulated execution in chunks under it, and writes each chunk
// through the fence check (WriteChunk). When the conversation is busy its
// user does what its Mix says: refuse, wait, queue, preempt, join or ask.
//
// A device says what happens to it in two ways, both read by the demo's
// supervisor (package demo) and never the other way round: one JSON line
// per happening on stdout (Report, DecodeReport), and its status in the
// demo's tables (Status, written at least every StatusHeartbeat), which the
// monitor's devices pane reads. Nothing in this package starts, signals or
// watches a process: that is the demo's runner.
package device
