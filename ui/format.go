package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/uuid"

	"github.com/leasetop/leasetop/internal/termtext"
)

// clean is termtext.Clean: the only way untrusted text reaches the screen.
func clean(s string, width int) string { return termtext.Clean(s, width) }

// shortRun is the first block of a run id, enough to tell runs apart.
func shortRun(u uuid.UUID) string {
	if u == uuid.Nil {
		return "-"
	}
	return u.String()[:8]
}

// compact formats a duration in at most six cells: 4.2s, 42s, 12m05s,
// 3h04m, 2d03h. Under ten seconds it shows tenths, floored, so a countdown
// never shows more time than is left.
func compact(d time.Duration) string {
	d = compactStep(d)
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%d.%ds", d/time.Second, d%time.Second/(100*time.Millisecond))
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	default:
		return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
	}
}

// compactStep is |d| cut to the precision compact shows it with: two
// durations with the same step read the same, so a view can tell that a
// countdown's text has not changed without formatting it.
func compactStep(d time.Duration) time.Duration {
	if d < 0 {
		d = -d
	}
	switch {
	case d < 10*time.Second:
		return d.Truncate(100 * time.Millisecond)
	case d < time.Hour:
		return d.Truncate(time.Second)
	case d < 24*time.Hour:
		return d.Truncate(time.Minute)
	default:
		return d.Truncate(time.Hour)
	}
}

// signedMillis formats a clock offset: +12ms, -1.250s.
func signedMillis(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	if d < time.Second {
		return fmt.Sprintf("%s%dms", sign, d/time.Millisecond)
	}
	return fmt.Sprintf("%s%.3fs", sign, d.Seconds())
}

// pad fits s (already safe) into exactly w cells, truncating with an
// ellipsis or padding with spaces.
func pad(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, termtext.Ellipsis)
	}
	return s + strings.Repeat(" ", w-sw)
}

// padLeft right-aligns s in w cells.
func padLeft(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw >= w {
		return pad(s, w)
	}
	return strings.Repeat(" ", w-sw) + s
}

// fit truncates a styled line to w cells.
func fit(s string, w int) string {
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, termtext.Ellipsis)
}

// oneLine folds a message onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// agoText is an elapsed time in whole seconds ("<1s", "12s"), then as
// compact does: for "expired 12s ago", where tenths are noise.
func agoText(d time.Duration) string {
	switch d = agoStep(d); {
	case d < time.Second:
		return "<1s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return compact(d)
}

// agoStep is to agoText what compactStep is to compact.
func agoStep(d time.Duration) time.Duration {
	switch {
	case d < time.Second:
		return 0
	case d < time.Minute:
		return d.Truncate(time.Second)
	}
	return compactStep(d)
}
