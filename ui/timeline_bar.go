package ui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// drawnBar is a lane as drawLane draws it: its text, and where each of its
// columns starts in that text. A scrub step redraws every lane with the
// cursor over one column; with the columns known, that is two slices of
// the text, not a measuring of each lane's tens of styled stretches
// grapheme by grapheme (ansi.Truncate), which was most of a scrubbed
// frame's cost.
type drawnBar struct {
	text string
	// cols[c] is where column c starts in text, and the style to open
	// before text[cols[c].at:] when it is drawn after a cut: its stretch's,
	// unless the column starts the stretch (its own sequence is then at
	// at). Nil when a column is not exactly one grapheme one cell wide (a
	// wide rune in a label): then the cursor measures.
	cols []barCol
}

type barCol struct {
	at int
	on string
}

// narrowGlyphs are the lanes' glyphs besides ASCII: each one grapheme one
// cell wide on its own.
const narrowGlyphs = "█░─┊•†⇄↯»✖│"

// joinPieces writes pieces as one line of cells columns, indexing them.
func joinPieces(pieces []piece, cells int) drawnBar {
	var b strings.Builder
	cols := make([]barCol, 0, cells)
	regular := true
	for _, p := range pieces {
		var on, off string
		if p.style != nil {
			on, off = p.style.on, p.style.off
		}
		start := b.Len()
		b.WriteString(on)
		col := func(i int) {
			if i == 0 {
				cols = append(cols, barCol{at: start})
			} else {
				cols = append(cols, barCol{at: b.Len(), on: on})
			}
		}
		if narrow(p.text) { // a rune a cell: no grapheme to measure
			i := 0
			for j, r := range p.text {
				col(i)
				b.WriteString(p.text[j : j+utf8.RuneLen(r)])
				i++
			}
		} else {
			for i, rest := 0, p.text; rest != ""; i++ {
				g, w := ansi.FirstGraphemeCluster(rest, ansi.GraphemeWidth)
				if g == "" {
					break
				}
				regular = regular && w == 1
				col(i)
				b.WriteString(g)
				rest = rest[len(g):]
			}
		}
		b.WriteString(off)
	}
	if !regular || len(cols) != cells {
		cols = nil
	}
	return drawnBar{text: b.String(), cols: cols}
}

// narrow says every rune of text is ASCII or one of narrowGlyphs: one
// grapheme one cell wide each.
func narrow(text string) bool {
	for _, r := range text {
		if r >= 0x80 && !strings.ContainsRune(narrowGlyphs, r) {
			return false
		}
	}
	return true
}

// cut draws glyph (already styled) over column c: the text before it, a
// reset, the glyph, and the text after it with its style opened again.
func (b drawnBar) cut(c int, glyph string) string {
	if b.cols == nil {
		return ansi.Truncate(b.text, c, "") + "\x1b[m" + glyph + ansi.TruncateLeft(b.text, c+1, "")
	}
	after := ""
	if c+1 < len(b.cols) {
		next := b.cols[c+1]
		after = next.on + b.text[next.at:]
	}
	return b.text[:b.cols[c].at] + "\x1b[m" + glyph + after
}
