package ui

import "github.com/leasetop/leasetop/monitor"

// Glyphs of a lane's marks (monitor.MarkKind); every one a single cell, and
// each also in the legend, so a lane reads the same without colour.
var markGlyphs = [monitor.NumMarks]string{
	monitor.MarkNone: "", monitor.MarkOther: "•", monitor.MarkMessage: "✉", monitor.MarkRefused: "⊘", monitor.MarkExpired: "†", monitor.MarkHandover: "⇄",
	monitor.MarkPreempted: "↯", monitor.MarkTakeover: "»", monitor.MarkZombie: "Z", monitor.MarkForced: "✖",
}
