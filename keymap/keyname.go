package keymap

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// modifierOrder lists the modifiers in the order Bubble Tea writes them in a
// keystroke.
func modifierOrder() []string { return []string{"ctrl", "alt", "shift", "meta", "hyper", "super"} }

// isNamedKey reports whether s is a non-printable key Bubble Tea names.
func isNamedKey(s string) bool {
	switch s {
	case "enter", "tab", "backspace", "esc", "space", "up", "down", "left", "right", "begin",
		"insert", "delete", "pgup", "pgdown", "home", "end":
		return true
	}
	return false
}

// keyAliases maps the other spellings a user may write to the name Bubble
// Tea prints for the key: help screens and READMEs of other tools say "pgdn",
// Bubble Tea says "pgdown", and a binding matches only the latter.
func keyAliases() map[string]string { return map[string]string{"pgdn": "pgdown"} }

// Canonical returns s with its base key written the way Bubble Tea prints it
// ("pgdn" and "shift+pgdn" become "pgdown" and "shift+pgdown"); any other
// name is returned unchanged.
func Canonical(s string) string {
	i := strings.LastIndex(s, "+")
	if i == len(s)-1 { // "+" or "ctrl++": the base is the plus key
		return s
	}
	if name, ok := keyAliases()[s[i+1:]]; ok {
		return s[:i+1] + name
	}
	return s
}

// CheckKey reports whether s names a key the way Bubble Tea prints it
// ("x", "G", "?", "ctrl+d", "shift+tab", "pgdown", "f5") or an alias
// Canonical rewrites ("pgdn"), and returns an error that says what is wrong
// otherwise.
func CheckKey(s string) error {
	if s == "" {
		return fmt.Errorf("empty key name")
	}
	parts := strings.Split(s, "+")
	base := parts[len(parts)-1]
	mods := parts[:len(parts)-1]
	if base == "" && len(parts) > 1 { // "ctrl++" or a trailing "+"
		if len(parts) >= 2 && parts[len(parts)-2] == "" {
			base, mods = "+", parts[:len(parts)-2]
		} else {
			return fmt.Errorf("key %q ends with +", s)
		}
	}
	order := modifierOrder()
	next := 0
	for _, m := range mods {
		i := indexOf(order, m)
		if i < 0 {
			return fmt.Errorf("key %q: unknown modifier %q (want ctrl, alt, shift, meta, hyper or super)", s, m)
		}
		if i < next {
			return fmt.Errorf("key %q: write modifiers in the order %s", s, strings.Join(order, "+"))
		}
		next = i + 1
	}
	switch {
	case isNamedKey(base), keyAliases()[base] != "":
		return nil
	case isFunctionKey(base):
		return nil
	case utf8.RuneCountInString(base) == 1:
		r, _ := utf8.DecodeRuneInString(base)
		if r == utf8.RuneError || !unicode.IsPrint(r) || r == ' ' {
			return fmt.Errorf("key %q: not a printable character (write space as \"space\")", s)
		}
		return nil
	}
	return fmt.Errorf("unknown key %q (want a character, or one of enter, tab, esc, space, backspace, up, down, left, right, home, end, pgup, pgdown (or pgdn), insert, delete, f1..f63, with optional ctrl+, alt+, shift+)", s)
}

func isFunctionKey(s string) bool {
	if len(s) < 2 || s[0] != 'f' {
		return false
	}
	n := 0
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
		if n > 63 {
			return false
		}
	}
	return n >= 1
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}
