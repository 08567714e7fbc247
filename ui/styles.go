package ui

import (
	"image/color"

	"charm.land/lipgloss/v2"

	"github.com/leasetop/leasetop/theme"
)

// styles are the monitor's colours and emphases. Every meaning also shows
// as text (a marker, a word), so the screen reads the same without colour
// (NO_COLOR) and in the golden tests, which strip styling.
type styles struct {
	title, dim, bold, key lipgloss.Style
	live, warn, bad, ok   lipgloss.Style
	badge, pausedBadge    lipgloss.Style
	selected              lipgloss.Style
	header                lipgloss.Style
	barGreen, barAmber    lipgloss.Style
	barRed, barEmpty      lipgloss.Style
	takeover, zombie      lipgloss.Style
	forced, released      lipgloss.Style
	dialogBox             lipgloss.Style
	paneTitle             lipgloss.Style
	tl                    timelineStyles
}

// newStyles builds the styles from a theme. A strong theme (high
// contrast) adds emphasis that is not colour: every state and the
// selection in bold.
func newStyles(t theme.Theme) styles {
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	state := func(c color.Color) lipgloss.Style { return fg(c).Bold(t.Strong) }
	s := styles{
		title:       lipgloss.NewStyle().Bold(true).Foreground(t.Accent),
		dim:         fg(t.Dim),
		bold:        lipgloss.NewStyle().Bold(true),
		key:         lipgloss.NewStyle().Bold(true).Foreground(t.Accent),
		live:        fg(t.OK).Bold(true),
		warn:        fg(t.Warn).Bold(true),
		bad:         fg(t.Bad).Bold(true),
		ok:          state(t.OK),
		badge:       lipgloss.NewStyle().Bold(true).Reverse(true),
		pausedBadge: lipgloss.NewStyle().Bold(true).Reverse(true).Foreground(t.Warn).Blink(true),
		selected:    lipgloss.NewStyle().Reverse(true).Bold(t.Strong),
		header:      lipgloss.NewStyle().Bold(true).Underline(true),
		barGreen:    fg(t.OK),
		barAmber:    fg(t.Warn),
		barRed:      fg(t.Bad),
		barEmpty:    fg(t.Faint),
		takeover:    state(t.Warn),
		zombie:      fg(t.Bad).Bold(true),
		forced:      fg(t.Forced).Bold(true),
		released:    fg(t.Dim),
		dialogBox: lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(t.Bad).
			Padding(0, 1),
		paneTitle: lipgloss.NewStyle().Bold(true),
	}
	s.tl = newTimelineStyles(t, s)
	return s
}
