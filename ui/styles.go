package ui

import (
	"image/color"

	"charm.land/lipgloss/v2"
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

func newStyles(isDark bool) styles {
	ld := lipgloss.LightDark(isDark)
	var (
		green  = ld(lipgloss.Color("#1a7f37"), lipgloss.Color("#3fb950"))
		amber  = ld(lipgloss.Color("#9a6700"), lipgloss.Color("#d29922"))
		red    = ld(lipgloss.Color("#cf222e"), lipgloss.Color("#f85149"))
		gray   = ld(lipgloss.Color("#6e7781"), lipgloss.Color("#8b949e"))
		faint  = ld(lipgloss.Color("#d0d7de"), lipgloss.Color("#30363d"))
		accent = ld(lipgloss.Color("#0969da"), lipgloss.Color("#58a6ff"))
		purple = ld(lipgloss.Color("#8250df"), lipgloss.Color("#bc8cff"))
	)
	fg := func(c color.Color) lipgloss.Style { return lipgloss.NewStyle().Foreground(c) }
	s := styles{
		title:       lipgloss.NewStyle().Bold(true).Foreground(accent),
		dim:         fg(gray),
		bold:        lipgloss.NewStyle().Bold(true),
		key:         lipgloss.NewStyle().Bold(true).Foreground(accent),
		live:        fg(green).Bold(true),
		warn:        fg(amber).Bold(true),
		bad:         fg(red).Bold(true),
		ok:          fg(green),
		badge:       lipgloss.NewStyle().Bold(true).Reverse(true),
		pausedBadge: lipgloss.NewStyle().Bold(true).Reverse(true).Foreground(amber).Blink(true),
		selected:    lipgloss.NewStyle().Reverse(true),
		header:      lipgloss.NewStyle().Bold(true).Underline(true),
		barGreen:    fg(green),
		barAmber:    fg(amber),
		barRed:      fg(red),
		barEmpty:    fg(faint),
		takeover:    fg(amber),
		zombie:      fg(red).Bold(true),
		forced:      fg(purple).Bold(true),
		released:    fg(gray),
		dialogBox: lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(red).
			Padding(0, 1),
		paneTitle: lipgloss.NewStyle().Bold(true),
	}
	s.tl = newTimelineStyles(isDark, s)
	return s
}
