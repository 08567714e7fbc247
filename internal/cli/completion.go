package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// cmdCompletion prints the completion script for a shell. The script asks
// leasetop itself (the hidden __complete command) what fits the word under
// the cursor: commands, flags, their fixed values, and account and session
// ids read from the database the line names.
func cmdCompletion(ctx context.Context, env Env, args []string) error {
	fs := newFlags(env, "completion", "completion bash|zsh|fish")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("completion takes one shell: %s (e.g. source <(leasetop completion bash))", strings.Join(shells(), ", "))
	}
	script, ok := completionScripts[fs.Arg(0)]
	if !ok {
		return usageErrorf("completion: unknown shell %q: choose %s", fs.Arg(0), strings.Join(shells(), ", "))
	}
	_, err := io.WriteString(env.Stdout, fmt.Sprintf(script, completeCommand, directiveFiles))
	return err
}

// shells are the shells completion writes scripts for.
func shells() []string { return []string{"bash", "zsh", "fish"} }

// completionScripts are the scripts, by shell; %[1]s is the hidden command,
// %[2]s the directive that asks for file names.
//
// Each passes the words before the cursor and the word being completed to
// leasetop __complete and offers its candidates quoted for the shell: a
// session id is text from the database, and must land on the command line
// as one literal word, never as shell syntax.
var completionScripts = map[string]string{
	"bash": `# bash completion for leasetop: source <(leasetop completion bash)
# Needs no bash-completion package. Each tab runs leasetop %[1]s, which may
# read account and session ids from the database (read-only, within 2 s).
_leasetop() {
    local line=${COMP_LINE:0:COMP_POINT}
    local -a words
    read -r -a words <<< "$line"
    [[ $line =~ [[:space:]]$ ]] && words+=("")
    (( ${#words[@]} > 0 )) || return 0
    # bash splits the word under the cursor at = and :, the line does not:
    # the candidates are whole words, so drop what bash keeps before cur.
    local cur=${COMP_WORDS[COMP_CWORD]}
    local typed=${words[${#words[@]}-1]}
    local lead=""
    [[ $typed == *"$cur" ]] && lead=${typed%%"$cur"}
    local out
    out=$(command "${words[0]}" %[1]s "${words[@]:1}" 2>/dev/null) || return 0
    local directive=${out%%%%$'\n'*}
    COMPREPLY=()
    local c q
    while IFS= read -r c; do
        [[ -z $c ]] && continue
        c=${c#"$lead"}
        printf -v q '%%q' "$c"
        COMPREPLY+=("$q")
    done <<< "${out#"$directive"}"
    if (( ${#COMPREPLY[@]} == 0 )) && [[ $directive == %[2]s ]]; then
        compopt -o default 2>/dev/null
    fi
    return 0
}
complete -F _leasetop leasetop
`,
	"zsh": `#compdef leasetop
# zsh completion for leasetop: source <(leasetop completion zsh), after
# compinit. Each tab runs leasetop %[1]s, which may read account and session
# ids from the database (read-only, within 2 s).
_leasetop() {
    local -a out candidates
    out=("${(@f)$(command ${words[1]} %[1]s "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    candidates=("${(@)out[2,-1]}")
    candidates=("${(@)candidates:#}")
    if (( ${#candidates} )); then
        compadd -- "${candidates[@]}"
    elif [[ ${out[1]} == %[2]s ]]; then
        _files
    fi
}
if [[ ${funcstack[1]} == _leasetop ]]; then
    _leasetop "$@"
else
    compdef _leasetop leasetop
fi
`,
	"fish": `# fish completion for leasetop: leasetop completion fish | source
# Each tab runs leasetop %[1]s, which may read account and session ids from
# the database (read-only, within 2 s).
function __leasetop_complete
    set -l tokens (commandline -opc)
    set -l current (commandline -ct)
    set -l out (command $tokens[1] %[1]s $tokens[2..-1] $current 2>/dev/null)
    or return
    if test (count $out) -le 1
        if test "$out[1]" = %[2]s
            __fish_complete_path $current
        end
        return
    end
    printf '%%s\n' $out[2..-1]
end
complete -c leasetop -f -a '(__leasetop_complete)'
`,
}
