// Package ui is leasetop's live terminal monitor, a Bubble Tea v2 program.
//
// Run opens it on a data.Store. NewProgram builds the same program without
// running it, for a caller that runs it with a wrapper around the model (the
// benchmark times every frame of exactly what users run).
//
// Everything the monitor shows comes from a monitor.State kept true by a
// monitor.Feed (see monitor); the model itself starts no goroutines and never
// touches the database in Update or View: every database call is a tea.Cmd
// built from the functions in Source, so the UI never blocks and tests can
// drive the model directly.
//
// A program whose processes can report what they believe they hold (the
// demo's devices) gives a monitor.DeviceSource in Config.Devices: the
// devices pane then shows each process beside what the server's lease table
// says, and flags where they disagree (monitor.CompareBeliefs judges; the
// pane words and colours the verdict).
//
// Untrusted text (ids, holder labels, reasons, error messages) reaches the
// screen only through internal/termtext.Clean.
package ui
