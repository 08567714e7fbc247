// Package audit proves from the database, after the fact, that the lease
// kept its promises on a history: Check reads lease.event and the fenced
// writes in leasetop_demo.output, restricted to the accounts of a Record,
// and verifies
//
//  1. OneOwner: never two unexpired owners of one session on the server
//     clock (a grant while another run held an unexpired lease, or a run a
//     holder believed it held that the database never granted);
//  2. FencesRise: fences rise per session;
//  3. NoStaleWrite: no write with a stale fence was accepted (every accepted
//     write carries the fence of a grant its run held and began inside it,
//     and in a limited account that grant took a slot);
//  4. RunsEnded: every started run ended (released, lost, or killed);
//
// and the busy strategies', limits' and inbox's promises (Invariants lists
// them all), among which
//
//  9. LimitKept: never more live runs of an account than its limit, counted
//     at each grant from the runs the history proves live then (PeakHolders
//     counts the same from the history and the lease rows, exactly, for the
//     tests that check a limit apart from Check);
//  10. MessagesOnce: every message acknowledged at most once, by the run it
//     was delivered to while that run held the conversation, or expired.
//
// The database is the authority. The Record adds only what the database
// cannot know: which runs the holders believed they started and how they
// say those ended, which processes were killed on purpose, and what was
// refused.
//
// Why a package of its own: the demo checks its run with it, and the fault
// suite (internal/faults) checks histories that are not the demo's, written
// by its own holders under network, process and clock faults. Neither owns
// the other's history, so the checker belongs to neither. The fenced writes
// are the demo's output table because both write through it: demo.Setup
// creates it and device.WriteChunk writes it through the fence check.
//
// Check is an ordinary function on a database, so a test can break a
// history on purpose and watch it fail.
package audit
