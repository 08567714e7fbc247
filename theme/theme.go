// Package theme holds the monitor's colours: the built-in themes (dark,
// light and high-contrast) and a theme file beside the key bindings file,
// as k9s has skins beside its config.
//
// A theme is colours only. What each state means also shows as a glyph or
// a word on the screen (● LIVE, █ held, ░ expired, ⚡ forced, the event
// kinds), which no theme changes: every theme, and no colour at all
// (NO_COLOR), keeps the states apart. The monitor builds its styles from a
// Theme (ui's newStyles); nothing here has behaviour beyond naming colours.
package theme

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Theme is the monitor's colours, by meaning.
type Theme struct {
	// Name is the built-in theme's name, or the file's base with its path.
	Name string
	// Accent colours titles and key names.
	Accent color.Color
	// OK is what is well: live, held with time to spare, handed over.
	OK color.Color
	// Warn is what needs a look: expiring, taken over, preempted, paused.
	Warn color.Color
	// Bad is what went wrong: expired, a zombie's renewal, down, the
	// forced release dialog.
	Bad color.Color
	// Dim is secondary text: labels, released leases, hints.
	Dim color.Color
	// Faint is the empty part of a TTL bar.
	Faint color.Color
	// Forced marks a forced release.
	Forced color.Color
	// Holders are the timeline's holder colours (a holder keeps its colour:
	// it is picked by a hash of its label).
	Holders []color.Color
	// HolderText is a holder's label written on its colour.
	HolderText color.Color
	// Strong adds emphasis that is not colour: every state and the
	// selection in bold; for high contrast, and terminals whose palette
	// makes two of the colours close.
	Strong bool
}

// Built-in theme names.
const (
	NameDark         = "dark"
	NameLight        = "light"
	NameHighContrast = "high-contrast"
)

// Names returns the built-in themes' names.
func Names() []string { return []string{NameDark, NameLight, NameHighContrast} }

// Builtin returns the built-in theme called name.
func Builtin(name string) (Theme, bool) {
	switch name {
	case NameDark:
		return Dark(), true
	case NameLight:
		return Light(), true
	case NameHighContrast:
		return HighContrast(), true
	}
	return Theme{}, false
}

// Auto is the theme for a terminal whose background is dark or not: what
// the monitor uses when none is chosen.
func Auto(isDark bool) Theme {
	if isDark {
		return Dark()
	}
	return Light()
}

// Dark is for a dark background (GitHub's dark palette).
func Dark() Theme {
	return Theme{
		Name:   NameDark,
		Accent: hex("#58a6ff"), OK: hex("#3fb950"), Warn: hex("#d29922"), Bad: hex("#f85149"),
		Dim: hex("#8b949e"), Faint: hex("#30363d"), Forced: hex("#bc8cff"),
		Holders:    hexes("#58a6ff", "#3fb950", "#bc8cff", "#f778ba", "#39c5cf", "#d29922", "#b1bac4", "#ffa657"),
		HolderText: hex("#0d1117"),
	}
}

// Light is for a light background (GitHub's light palette).
func Light() Theme {
	return Theme{
		Name:   NameLight,
		Accent: hex("#0969da"), OK: hex("#1a7f37"), Warn: hex("#9a6700"), Bad: hex("#cf222e"),
		Dim: hex("#6e7781"), Faint: hex("#d0d7de"), Forced: hex("#8250df"),
		Holders:    hexes("#0969da", "#1a7f37", "#8250df", "#bf3989", "#0e7490", "#9a6700", "#57606a", "#953800"),
		HolderText: hex("#ffffff"),
	}
}

// HighContrast uses the terminal's own sixteen colours, which its palette
// (and an accessibility palette) sets, at their brightest, and adds
// emphasis that is not colour (Strong). It suits a dark or a light
// background.
func HighContrast() Theme {
	return Theme{
		Name:   NameHighContrast,
		Accent: lipgloss.BrightCyan, OK: lipgloss.BrightGreen, Warn: lipgloss.BrightYellow, Bad: lipgloss.BrightRed,
		Dim: lipgloss.White, Faint: lipgloss.BrightBlack, Forced: lipgloss.BrightMagenta,
		Holders: []color.Color{lipgloss.BrightCyan, lipgloss.BrightGreen, lipgloss.BrightMagenta, lipgloss.BrightYellow,
			lipgloss.BrightBlue, lipgloss.BrightWhite, lipgloss.BrightRed, lipgloss.Cyan},
		HolderText: lipgloss.Black,
		Strong:     true,
	}
}

func hex(s string) color.Color { return lipgloss.Color(s) }

func hexes(s ...string) []color.Color {
	out := make([]color.Color, len(s))
	for i, h := range s {
		out[i] = hex(h)
	}
	return out
}
