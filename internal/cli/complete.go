package cli

import (
	"context"
	"flag"
	"io"
	"slices"
	"strings"

	"github.com/leasetop/leasetop/internal/termtext"
)

// completeCommand is the hidden command the completion scripts call with
// the words of the command line up to the cursor (the last one is the word
// being completed, maybe empty), as kubectl's scripts call kubectl
// __complete. It prints a directive line, then one candidate per line:
//
//	:files     (no candidate: let the shell complete file names)
//	:nofiles
//
// It never fails: whatever goes wrong (an unknown command, a database that
// does not answer within its bound) leaves fewer candidates.
const completeCommand = "__complete"

// Directives, the first line of __complete's answer.
const (
	directiveFiles   = ":files"
	directiveNoFiles = ":nofiles"
)

// maxCandidates bounds what one completion offers (and reads).
const maxCandidates = 200

func cmdComplete(ctx context.Context, env Env, args []string) error {
	files, candidates := complete(ctx, env, args)
	directive := directiveNoFiles
	if files && len(candidates) == 0 {
		directive = directiveFiles
	}
	writeCandidates(env.Stdout, directive, candidates)
	return nil
}

// writeCandidates prints the directive and the candidates, leaving out any
// that a terminal or the line protocol could not carry as it is (control
// characters, invisible runes, line breaks: an id from the database may hold
// anything).
func writeCandidates(w io.Writer, directive string, candidates []string) {
	var b strings.Builder
	b.WriteString(directive + "\n")
	n := 0
	for _, c := range candidates {
		if c == "" || strings.ContainsFunc(c, termtext.Unsafe) || n == maxCandidates {
			continue
		}
		b.WriteString(c + "\n")
		n++
	}
	_, _ = io.WriteString(w, b.String())
}

// commandLine is what completion understood of the words before the cursor.
type commandLine struct {
	command  command
	flags    map[string]*flag.Flag // the command's flags, by name
	given    map[string][]string   // the values of the flags given so far
	args     int                   // positional arguments given so far
	afterCmd bool                  // past run's "--": the words are the command it runs
	named    bool                  // the command was named (not the default, watch)
}

// complete returns the candidates for the last of words, and whether file
// names suit it when there is none.
func complete(ctx context.Context, env Env, words []string) (files bool, candidates []string) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	line, ok := parseLine(before)
	if !ok {
		return false, nil
	}
	switch {
	case line.afterCmd:
		return true, nil
	case !line.named && line.args == 0 && !strings.HasPrefix(cur, "-") && len(line.given) == 0:
		return false, withPrefix(commandNames(), cur)
	}
	if len(before) > 0 {
		if f, ok := line.flags[flagName(before[len(before)-1])]; ok && wantsValue(before[len(before)-1], f) {
			return completeValue(ctx, env, line, f, "", cur)
		}
	}
	if name, value, ok := strings.Cut(cur, "="); ok && strings.HasPrefix(name, "-") {
		if f, ok := line.flags[flagName(name)]; ok {
			return completeValue(ctx, env, line, f, name+"=", value)
		}
		return false, nil
	}
	if strings.HasPrefix(cur, "-") {
		return false, withPrefix(flagNames(line), cur)
	}
	return completeArg(line, cur)
}

// parseLine reads the command and the flags given before the word being
// completed.
func parseLine(words []string) (commandLine, bool) {
	line := commandLine{given: map[string][]string{}}
	name := "watch"
	if len(words) > 0 && !strings.HasPrefix(words[0], "-") {
		name, words, line.named = words[0], words[1:], true
	}
	if name == "help" {
		line.command = command{name: "help"}
		line.args = len(words)
		return line, true
	}
	c, ok := lookup(name)
	if !ok || c.hidden {
		return line, false
	}
	line.command, line.flags = c, flagsOf(c)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			line.afterCmd = c.name == "run"
			line.args += len(words) - i - 1
			return line, true
		case strings.HasPrefix(w, "-") && len(w) > 1:
			f, ok := line.flags[flagName(w)]
			if !ok {
				continue
			}
			if _, v, hasValue := strings.Cut(w, "="); hasValue {
				line.given[f.Name] = append(line.given[f.Name], v)
			} else if wantsValue(w, f) && i+1 < len(words) {
				i++
				line.given[f.Name] = append(line.given[f.Name], words[i])
			} else {
				line.given[f.Name] = append(line.given[f.Name], "")
			}
		default:
			if c.name == "run" { // run's command may follow its flags without "--"
				line.afterCmd = true
			}
			line.args++
		}
	}
	return line, true
}

// flagName is the name in "-name", "--name" or "--name=value".
func flagName(w string) string {
	w = strings.TrimLeft(w, "-")
	name, _, _ := strings.Cut(w, "=")
	return name
}

// wantsValue says whether word w (a flag without "=value") takes the next
// word as its value: every flag but the booleans.
func wantsValue(w string, f *flag.Flag) bool {
	if strings.Contains(w, "=") {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// flagsOf returns c's flags, learnt from c itself: it runs c in describe
// mode (parseFlags hands over the flag set instead of parsing) with an
// ended context, so that nothing could connect or start even if a command
// did work before parsing its flags.
func flagsOf(c command) map[string]*flag.Flag {
	flags := map[string]*flag.Flag{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env := Env{Getenv: func(string) string { return "" }, Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard,
		describe: func(fs *flag.FlagSet) { fs.VisitAll(func(f *flag.Flag) { flags[f.Name] = f }) }}
	_ = c.run(ctx, env, []string{"-h"})
	return flags
}

// flagNames are "--name" for each of the line's command's flags not given
// yet (a list flag may be given again), and for the default command the
// top-level ones too.
func flagNames(line commandLine) []string {
	var out []string
	for name := range line.flags {
		if _, given := line.given[name]; given && !valuesOf(line.command.name, line.flags[name]).list {
			continue
		}
		out = append(out, "--"+name)
	}
	if !line.named {
		out = append(out, "--help", "--version")
	}
	slices.Sort(out)
	return out
}

// commandNames are the commands a user may type, and help.
func commandNames() []string {
	out := []string{"help"}
	for _, c := range commands() {
		if !c.hidden {
			out = append(out, c.name)
		}
	}
	slices.Sort(out)
	return out
}

// completeArg completes a positional argument.
func completeArg(line commandLine, cur string) (bool, []string) {
	switch {
	case line.command.name == "help" && line.args == 0:
		return false, withPrefix(slices.DeleteFunc(commandNames(), func(n string) bool { return n == "help" }), cur)
	case line.command.name == "completion" && line.args == 0:
		return false, withPrefix(shells(), cur)
	}
	return false, nil
}

// completeValue completes the value of flag f of line's command: cur is
// what is typed of it, lead what goes before it in the word ("--name=" or
// nothing).
func completeValue(ctx context.Context, env Env, line commandLine, f *flag.Flag, lead, cur string) (bool, []string) {
	v := valuesOf(line.command.name, f)
	done, part := "", cur
	if v.list {
		if i := strings.LastIndex(cur, ","); i >= 0 {
			done, part = cur[:i+1], cur[i+1:]
		}
	}
	var all []string
	switch {
	case v.fixed != nil:
		all = withPrefix(v.fixed(), part)
		if done == "" {
			all = append(all, withPrefix(v.alone, part)...)
		}
	case v.live != nil:
		all = v.live(ctx, env, line, part)
	}
	taken := strings.Split(done, ",")
	var out []string
	for _, c := range all {
		if !slices.Contains(taken, c) {
			out = append(out, lead+done+c)
		}
	}
	return v.files, out
}

// withPrefix returns the values that begin with prefix.
func withPrefix(values []string, prefix string) []string {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out
}
