package ui

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	xansi "github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/leasetop/leasetop/theme"
)

// TestThemeGolden: each built-in theme's screen, the table with its events
// and the timeline, as the monitor writes it: colours and emphases kept
// (ESC shown as \e), so that a change of colour shows in the diff.
// Regenerate with go test ./ui -run TestThemeGolden -update, after reading
// the diff. Without its colours each screen is exactly the one
// TestGolden and TestTimelineGolden hold: a theme changes colours only,
// and the glyphs and words that tell the states apart stay.
func TestThemeGolden(t *testing.T) {
	t.Parallel()
	for _, name := range theme.Names() {
		th, _ := theme.Builtin(name)
		withTheme := func(c *Config) { c.Theme = &th }
		t.Run(name+"_table", func(t *testing.T) {
			m, _ := newModel(t, 100, 30, withTheme)
			apply(m, syncBatch(loadedLeases(), loadedEvents()))
			requireThemeGolden(t, m, "TestGolden/loaded.golden")
		})
		t.Run(name+"_timeline", func(t *testing.T) {
			m, _ := timelineModel(t, 80, 24, time.Time{}, withTheme)
			requireThemeGolden(t, m, "TestTimelineGolden/live_80x24.golden")
		})
	}
}

// requireThemeGolden compares m's styled screen with the test's golden file
// and its unstyled screen with plain, the theme-less golden file.
func requireThemeGolden(t *testing.T, m *Model, plain string) {
	t.Helper()
	raw := m.View().Content
	want, err := os.ReadFile(filepath.Join("testdata", plain))
	if err != nil {
		t.Fatal(err)
	}
	if got := xansi.Strip(raw); got != string(want) {
		t.Errorf("without colour the screen differs from testdata/%s:\n%s", plain, got)
	}
	golden.RequireEqual(t, strings.ReplaceAll(raw, "\x1b", `\e`))
}

// TestThemeDistinctColours: in every built-in theme the states that share
// a screen have colours of their own, and a holder's label is drawn on its
// colour in another.
func TestThemeDistinctColours(t *testing.T) {
	for _, name := range theme.Names() {
		th, _ := theme.Builtin(name)
		seen := map[string]string{}
		for what, c := range map[string]color.Color{"accent": th.Accent, "ok": th.OK, "warn": th.Warn, "bad": th.Bad, "dim": th.Dim, "faint": th.Faint, "forced": th.Forced} {
			key := colourKey(c)
			if other, dup := seen[key]; dup {
				t.Errorf("%s: %s and %s have the same colour %s", name, what, other, key)
			}
			seen[key] = what
		}
		for i, h := range th.Holders {
			if colourKey(h) == colourKey(th.HolderText) {
				t.Errorf("%s: holder colour %d is the labels' colour %s", name, i, colourKey(h))
			}
		}
	}
}

// colourKey is c as its RGBA values.
func colourKey(c color.Color) string {
	r, g, b, a := c.RGBA()
	return fmt.Sprint(r, g, b, a)
}

// TestChosenThemeIgnoresBackground: the terminal's answer about its
// background picks dark or light only when no theme was chosen.
func TestChosenThemeIgnoresBackground(t *testing.T) {
	light := theme.Light()
	for _, tt := range []struct {
		name string
		cfg  func(*Config)
		want theme.Theme
	}{
		{"automatic", nil, theme.Dark()},
		{"chosen", func(c *Config) { c.Theme = &light }, theme.Light()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mut []func(*Config)
			if tt.cfg != nil {
				mut = append(mut, tt.cfg)
			}
			m, _ := newModel(t, 80, 24, mut...)
			m.Update(tea.BackgroundColorMsg{Color: xansi.Black}) // a dark background
			if got, want := m.styles.bad.Render("x"), newStyles(tt.want).bad.Render("x"); got != want {
				t.Errorf("after a dark background, bad renders %q, want %q (%s)", got, want, tt.want.Name)
			}
		})
	}
}
