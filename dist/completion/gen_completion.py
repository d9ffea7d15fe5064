#!/usr/bin/env python3
"""Writes nsbox's bash and zsh completion from the option table.

Usage: gen_completion.py TABLES BASH_OUT ZSH_OUT
TABLES is what dist/tables.c prints (the command and option tables of
config/cli_parse.c), so an option completes as soon as it is in the table.
A value is completed by its metavar: "a|b" (lower-case words) lists the
words, DIR directories, FILE/PATH/SCRIPT/SRC... files, NAME|FILE profile names
and .ini files; any other value (sizes, durations, counts) gets nothing.
"""
import re
import sys


def read_tables(path):
    commands, options = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = line.rstrip("\n").split("\t")
            if row[0] == "command":
                commands.append(row[1])
            elif row[0] == "option":
                options.append((row[1], None if row[2] == "-" else row[2], row[3].split(",") if row[3] else []))
    if not commands or not options:
        sys.exit("gen_completion: %s holds no command or option rows" % path)
    return commands, options


def value_kind(metavar):
    """(kind, words) for a metavar: kind is words|dirs|files|profile|none."""
    if metavar == "NAME|FILE":
        return "profile", []
    if re.fullmatch(r"[a-z]+(\|[a-z]+)+", metavar):
        return "words", metavar.split("|")
    if metavar == "DIR":
        return "dirs", []
    if metavar in ("FILE", "PATH", "SCRIPT") or metavar.startswith("SRC"):
        return "files", []
    return "none", []


BASH_HEAD = r'''# bash completion for nsbox(1): commands, each command's options, their
# values and profile names. Generated from nsbox's option table by
# dist/completion/gen_completion.py; do not edit.

_nsbox_profiles()
{
    local dir f
    echo python minimal
    for dir in %(sysdir)s "${XDG_CONFIG_HOME:-$HOME/.config}/nsbox/profiles"; do
        for f in "$dir"/*.ini; do
            [ -e "$f" ] || continue
            f=${f##*/}
            echo "${f%%.ini}"
        done
    done
}

# executables on PATH (absolute entries) whose names start with $1
_nsbox_path_commands()
{
    local dir f IFS=:
    for dir in $PATH; do
        [[ $dir == /* ]] || continue
        for f in "$dir/$1"*; do
            [[ -f $f && -x $f ]] && echo "${f##*/}"
        done
    done | sort -u
}

_nsbox()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd=${COMP_WORDS[1]} opts= i
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "%(commands)s help --help --version" -- "$cur"))
        return
    fi
    # nsbox help COMMAND, nsbox --help COMMAND
    if [[ $cmd == help || $cmd == --help || $cmd == -h ]]; then
        ((COMP_CWORD == 2)) && COMPREPLY=($(compgen -W "%(commands)s" -- "$cur"))
        return
    fi
    # after "--" the words are the program's: files; but run's COMMAND, the
    # word right after it, is looked up on PATH unless it holds a "/" (a
    # bare name of a file here exits 127), so it completes as PATH's
    # executables
    for ((i = 2; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == -- ]]; then
            if [[ $cmd == run && $i -eq $((COMP_CWORD - 1)) && $cur != */* ]]; then
                COMPREPLY=($(_nsbox_path_commands "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
    done
    case $cmd in
%(optcases)s
        *) return ;;
    esac
    case $prev in
%(valcases)s
    esac
    if [[ $cmd == profile ]]; then
        if ((COMP_CWORD == 2)); then
            COMPREPLY=($(compgen -W "show --help" -- "$cur"))
        elif ((COMP_CWORD == 3)); then
            COMPREPLY=($(compgen -W "$(_nsbox_profiles)" -- "$cur") $(compgen -f -X '!*.ini' -- "$cur"))
        fi
        return
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -f -- "$cur"))
}
complete -o filenames -F _nsbox nsbox
'''

BASH_VALUES = {
    "profile": 'COMPREPLY=($(compgen -W "$(_nsbox_profiles)" -- "$cur") $(compgen -f -X \'!*.ini\' -- "$cur")); return ;;',
    "dirs": 'COMPREPLY=($(compgen -d -- "$cur")); return ;;',
    "files": 'COMPREPLY=($(compgen -f -- "$cur")); return ;;',
    "none": "return ;;",
}


def bash(commands, options, sysdir):
    optcases = []
    for c in commands:
        names = ["--" + n for n, _, cmds in options if c in cmds]
        if c == "batch":
            names.append("-j")
        if c == "python":
            names.append("-c")
        optcases.append('        %s) opts="%s" ;;' % (c, " ".join(names)))
    valcases = []
    seen = set()
    for n, metavar, _ in options:
        if metavar is None or n in seen:
            continue
        seen.add(n)
        kind, words = value_kind(metavar)
        action = ('COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;' % " ".join(words)
                  if kind == "words" else BASH_VALUES[kind])
        valcases.append("        --%s) %s" % (n, action))
    valcases.append("        -j|-c) return ;;")
    return BASH_HEAD % {"sysdir": sysdir, "commands": " ".join(commands),
                        "optcases": "\n".join(optcases), "valcases": "\n".join(valcases)}


ZSH_HEAD = r'''#compdef nsbox
# zsh completion for nsbox(1): commands, each command's options, their values
# and profile names. Generated from nsbox's option table by
# dist/completion/gen_completion.py; do not edit.

_nsbox_profiles()
{
    local -a names
    local dir
    names=(python minimal)
    for dir in %(sysdir)s ${XDG_CONFIG_HOME:-$HOME/.config}/nsbox/profiles; do
        names+=($dir/*.ini(N:t:r))
    done
    _alternative 'profiles:profile:compadd -a names' 'files:profile file:_files -g "*.ini"'
}

_nsbox()
{
    if (( CURRENT == 2 )); then
        compadd -- %(commands)s help --help --version
        return
    fi
    local cmd=$words[2]
    if [[ $cmd == help || $cmd == --help || $cmd == -h ]]; then
        (( CURRENT == 3 )) && compadd -- %(commands)s
        return
    fi
    shift words
    (( CURRENT-- ))
    case $cmd in
%(cases)s
    esac
}

_nsbox "$@"
'''

ZSH_VALUES = {"profile": "_nsbox_profiles", "dirs": "_files -/", "files": "_files", "none": " "}


def zsh_escape(text):
    return re.sub(r"([\[\]:\\])", r"\\\1", text)


def zsh(commands, options, sysdir):
    cases = []
    for c in commands:
        specs = []
        for n, metavar, cmds in options:
            if c not in cmds:
                continue
            if metavar is None:
                specs.append("'--%s'" % n)
                continue
            kind, words = value_kind(metavar)
            action = "(%s)" % " ".join(words) if kind == "words" else ZSH_VALUES[kind]
            specs.append("'*--%s=:%s:%s'" % (n, zsh_escape(metavar), action))
        if c == "python":
            specs.append("'-c:CODE: '")
        elif c == "batch":
            specs.append("'*-j:N: '")
        if c == "run":
            specs.append("'*::command:_normal'")
        elif c == "profile":
            specs.append("'1:action:(show)'")
            specs.append("'2:profile:_nsbox_profiles'")
        else:
            specs.append("'*:file:_files'")
        cases.append("        %s)\n            _arguments -s \\\n                %s ;;"
                     % (c, " \\\n                ".join(specs)))
    return ZSH_HEAD % {"sysdir": sysdir, "commands": " ".join(commands), "cases": "\n".join(cases)}


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: gen_completion.py TABLES SYSTEM_PROFILE_DIR BASH_OUT ZSH_OUT")
    commands, options = read_tables(sys.argv[1])
    sysdir = sys.argv[2]
    if not sysdir.startswith("/") or re.search(r"[\s'\"$`\\]", sysdir):
        sys.exit("gen_completion: system profile dir %r: expected an absolute path without blanks or quotes" % sysdir)
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        f.write(bash(commands, options, sysdir))
    with open(sys.argv[4], "w", encoding="utf-8") as f:
        f.write(zsh(commands, options, sysdir))


if __name__ == "__main__":
    main()
