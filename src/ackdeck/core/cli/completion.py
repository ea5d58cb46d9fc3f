"""Shell completion scripts for bash, zsh and fish, generated from the argparse parsers.

`spec(parser)` reads the parser tree once into plain tables (per command path: its
subcommands, its options, which options take a value and what kind, what its positionals
are); each shell gets the same tables in its own syntax and a small walker that finds the
command path of the words typed so far, then offers subcommands, options, or values. Values
are completed by kind: `@file` (rooms, settings, configs), `@dir`, `@run` (the run names under
the home, listed by `ackdeck completion --names runs`, which honours a `--home` typed on the
line), `@command` (after `--`), a list of choices, or nothing (free text).

Imported only by `ackdeck completion`: never on a per-turn command's path.
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = "ackdeck"
SHELLS = ("bash", "zsh", "fish")

# What a value is, by the argument's dest or metavar (the parsers name them consistently).
_FILE_DESTS = {"room", "settings", "config"}
_FILE_METAVARS = {"ROOM", "PATH", "FILE"}
_DIR_DESTS = {"home", "cwd"}
_RUN_NAME_COMMANDS = {"output", "kill", "wakes dismiss"}  # NAME names an existing run


class Spec:
    """The parser tree as tables keyed by command path (`ackdeck`, `ackdeck room`, ...)."""

    def __init__(self) -> None:
        self.subs: dict[str, list[str]] = {}
        self.options: dict[str, list[str]] = {}
        self.values: dict[str, str] = {}  # "PATH OPTION" -> kind, for options taking a value
        self.positionals: dict[str, list[str]] = {}  # kinds in order; "+" ends a repeated one


def spec(parser: argparse.ArgumentParser) -> Spec:
    out = Spec()
    _walk(parser, ROOT, out)
    # The global --home stands after any command too (core/cli hoists it to the front).
    for path, options in out.options.items():
        if path != ROOT and "--home" not in options:
            options.append("--home")
            out.values[f"{path} --home"] = "@dir"
    return out


def _walk(parser: argparse.ArgumentParser, path: str, out: Spec) -> None:
    command = path.removeprefix(ROOT).strip()
    options: list[str] = []
    positionals: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names = list(action.choices)
            out.subs[path] = names
            for name, child in action.choices.items():
                _walk(child, f"{path} {name}", out)
            continue
        if action.option_strings:
            if action.help == argparse.SUPPRESS:
                continue
            options.extend(action.option_strings)
            if action.nargs != 0:
                kind = _kind(action, command)
                for o in action.option_strings:
                    out.values[f"{path} {o}"] = kind
        else:
            kind = _kind(action, command)
            repeated = action.nargs in ("+", "*", argparse.REMAINDER)
            positionals.append(kind + ("+" if repeated else ""))
    out.options[path] = options
    if positionals:
        out.positionals[path] = positionals


def _kind(action: argparse.Action, command: str) -> str:
    if action.choices is not None:
        return " ".join(str(c) for c in action.choices)
    if action.dest in _FILE_DESTS or action.metavar in _FILE_METAVARS:
        return "@file"
    if action.dest in _DIR_DESTS or action.metavar == "DIR":
        return "@dir"
    if action.dest == "name" and command in _RUN_NAME_COMMANDS:
        return "@run"
    if action.dest == "cmd":
        return "@command"
    return "@none"


# ----- bash ---------------------------------------------------------------------------------
def _assoc(name: str, table: dict[str, str]) -> Iterator[str]:
    yield f"declare -gA {name}=("
    for key, value in table.items():
        yield f"  [{shlex.quote(key)}]={shlex.quote(value)}"
    yield ")"


def _tables(s: Spec) -> dict[str, dict[str, str]]:
    return {
        "subs": {k: " ".join(v) for k, v in s.subs.items()},
        "opts": {k: " ".join(v) for k, v in s.options.items()},
        "vals": dict(s.values),
        "pos": {k: "\t".join(v) for k, v in s.positionals.items()},
    }


# Shared by bash and zsh (zsh runs it with bash's array indexing and word splitting): the
# tables in `declare -A` form, and what to offer for the word under the cursor.
_KIND = r"""
# Walks the words before the cursor (COMP_WORDS, COMP_CWORD) to the command path, then sets
# kind: what to offer (@file, @dir, @run, @command, @none, or the words themselves: options,
# subcommands, choices), and home (a --home typed on the line, for @run).
_ackdeck_kind() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmdpath=ackdeck npos=0 dashdash=-1 i w
  home="" kind=@none
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    if ((dashdash >= 0)); then ((dashdash++)); continue; fi
    if [[ $w == -- ]]; then dashdash=0; continue; fi
    if [[ $w == -* ]]; then
      if [[ $w != *=* && -n ${_ackdeck_vals[$cmdpath $w]+x} ]]; then
        ((i++))
        [[ $w == --home ]] && home=${COMP_WORDS[i]}
      fi
      continue
    fi
    if [[ " ${_ackdeck_subs[$cmdpath]} " == *" $w "* ]]; then
      cmdpath="$cmdpath $w" npos=0
    else
      ((npos++))
    fi
  done
  if ((dashdash == 0)); then
    kind=@command
  elif ((dashdash > 0)); then
    kind=@file
  elif ((COMP_CWORD > 1)) && [[ $prev == -* && -n ${_ackdeck_vals[$cmdpath $prev]+x} ]]; then
    kind=${_ackdeck_vals[$cmdpath $prev]}
  elif [[ $cur == -* ]]; then
    kind=${_ackdeck_opts[$cmdpath]}
  elif [[ -n ${_ackdeck_subs[$cmdpath]} ]]; then
    kind=${_ackdeck_subs[$cmdpath]}
  else
    local IFS=$'\t'
    local -a kinds
    kinds=(${_ackdeck_pos[$cmdpath]})
    ((${#kinds[@]})) || return 0
    if ((npos < ${#kinds[@]})); then
      kind=${kinds[npos]}
    elif [[ ${kinds[${#kinds[@]}-1]} == *+ ]]; then
      kind=${kinds[${#kinds[@]}-1]}
    fi
    kind=${kind%+}
  fi
}
"""

_BASH = r"""
_ackdeck() {
  local cur=${COMP_WORDS[COMP_CWORD]} home kind
  _ackdeck_kind
  COMPREPLY=()
  case $kind in
    @file) compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- "$cur")) ;;
    @dir) compopt -o dirnames 2>/dev/null; COMPREPLY=($(compgen -d -- "$cur")) ;;
    @command) COMPREPLY=($(compgen -c -- "$cur")) ;;
    @run)
      local names
      names=$("${COMP_WORDS[0]}" completion --names runs ${home:+--home "$home"} 2>/dev/null)
      COMPREPLY=($(compgen -W "$names" -- "$cur")) ;;
    @none) ;;
    *) COMPREPLY=($(compgen -W "$kind" -- "$cur")) ;;
  esac
}
complete -F _ackdeck ackdeck
"""


def _shared(s: Spec) -> list[str]:
    lines: list[str] = []
    for name, table in _tables(s).items():
        lines.extend(_assoc(f"_ackdeck_{name}", table))
    return lines + _KIND.strip("\n").splitlines()


def bash(s: Spec) -> str:
    lines = ['# ackdeck completion for bash: eval "$(ackdeck completion bash)"', *_shared(s)]
    return "\n".join(lines) + "\n" + _BASH.lstrip("\n")


# ----- zsh ----------------------------------------------------------------------------------
_ZSH = r"""
_ackdeck_zsh_kind() {
  setopt localoptions ksharrays shwordsplit  # the shared function's bash habits, here only
  _ackdeck_kind
}

_ackdeck() {
  local -a COMP_WORDS
  COMP_WORDS=("${words[@]}")
  local COMP_CWORD=$((CURRENT - 1)) home kind
  _ackdeck_zsh_kind
  case $kind in
    @file) _files ;;
    @dir) _directories ;;
    @command) _command_names ;;
    @run)
      local -a homeopt
      [[ -n $home ]] && homeopt=(--home $home)
      compadd -- ${(f)"$(${words[1]} completion --names runs $homeopt 2>/dev/null)"} ;;
    @none) return 1 ;;
    *) compadd -- ${=kind} ;;
  esac
}
"""


def zsh(s: Spec) -> str:
    lines = [
        "#compdef ackdeck",
        '# ackdeck completion for zsh: eval "$(ackdeck completion zsh)" (after compinit), or',
        "# save it as _ackdeck in a directory on $fpath",
        *_shared(s),
    ]
    body = "\n".join(lines) + "\n" + _ZSH.lstrip("\n")
    # Sourced (eval) it registers itself; autoloaded from $fpath, the file is the function.
    return body + "if (( $+functions[compdef] )); then compdef _ackdeck ackdeck; fi\n"


# ----- fish ---------------------------------------------------------------------------------
_FISH = r"""
function __ackdeck_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l cmdpath ackdeck
    set -l npos 0
    set -l home ''
    set -l dashdash -1
    set -l skip 0
    set -l prev ''
    for w in $words[2..-1]
        set prev $w
        if test $skip -eq 1
            set skip 0
            continue
        end
        if test $skip -eq 2
            set home $w
            set skip 0
            continue
        end
        if test $dashdash -ge 0
            set dashdash (math $dashdash + 1)
            continue
        end
        if test "$w" = --
            set dashdash 0
            continue
        end
        if string match -q -- '-*' $w
            set -l takes (__ackdeck_get vals "$cmdpath $w")
            if not string match -q -- '*=*' $w; and test -n "$takes"
                set skip 1
                test "$w" = --home; and set skip 2
            end
            continue
        end
        if contains -- $w (string split ' ' -- (__ackdeck_get subs $cmdpath))
            set cmdpath "$cmdpath $w"
            set npos 0
        else
            set npos (math $npos + 1)
        end
    end
    set -l kind
    if test $dashdash -eq 0
        __fish_complete_command $cur
        return
    else if test $dashdash -gt 0
        __fish_complete_path $cur
        return
    else if test $skip -ne 0
        set kind (__ackdeck_get vals "$cmdpath $prev")
    else if string match -q -- '-*' $cur
        string split ' ' -- (__ackdeck_get opts $cmdpath)
        return
    else if test -n "$(__ackdeck_get subs $cmdpath)"
        string split ' ' -- (__ackdeck_get subs $cmdpath)
        return
    else
        set -l kinds (string split \t -- (__ackdeck_get pos $cmdpath))
        test (count $kinds) -eq 0; and return
        set -l n (count $kinds)
        if test $npos -lt $n
            set kind $kinds[(math $npos + 1)]
        else
            set kind $kinds[-1]
            string match -q -- '*+' $kind; or return
        end
        set kind (string replace -r '\+$' '' -- $kind)
    end
    switch $kind
        case @file
            __fish_complete_path $cur
        case @dir
            __fish_complete_directories $cur
        case @command
            __fish_complete_command $cur
        case @run
            if test -n "$home"
                $words[1] completion --names runs --home $home 2>/dev/null
            else
                $words[1] completion --names runs 2>/dev/null
            end
        case @none
            return
        case '*'
            string split ' ' -- $kind
    end
end
complete -c ackdeck -f -a '(__ackdeck_complete)'
"""


def fish(s: Spec) -> str:
    lines = ["# ackdeck completion for fish: ackdeck completion fish | source"]
    lines.append("function __ackdeck_get --argument-names table key")
    lines.append("    switch $table$key")
    for name, table in _tables(s).items():
        for key, value in table.items():
            lines.append(f"        case {_fish_quote(name + key)}")
            lines.append(f"            printf '%s\\n' {_fish_quote(value)}")
    lines.append("    end")
    lines.append("end")
    return "\n".join(lines) + "\n" + _FISH.lstrip("\n")


def _fish_quote(text: str) -> str:
    """A fish single-quoted word (only \\ and ' are special inside '...'). The keys hold no
    `*` or `?`, the only characters a `case` pattern would still treat as wildcards."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    s = spec(parser)
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](s)
