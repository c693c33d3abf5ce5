"""``triohooks completion bash|zsh|fish``: shell completion, written from the CLI's own parser.

The script is generated from the argparse parser every command is defined by, so it names
exactly the commands, sub-actions (``claude install``, ``audit tail``) and options this version
has, and the event names ``fire`` takes; nothing is kept by hand beside the parser. bash gets a
completion function; zsh the same function through zsh's ``bashcompinit``; fish its own
``complete`` lines.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any, Final

SHELLS: Final = ("bash", "zsh", "fish")


class Command:
    """One command (or sub-action): its options, its sub-actions, its positional words."""

    def __init__(self, help_text: str) -> None:
        self.help = help_text
        self.options: list[tuple[str, str]] = []
        self.actions: dict[str, Command] = {}
        self.words: list[str] = []


def add_completion_command(sub: Any) -> None:
    p = sub.add_parser("completion", help="print a shell completion script: bash, zsh or fish")
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[Any] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _command(parser: argparse.ArgumentParser, help_text: str) -> Command:
    command = Command(help_text)
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            for option in action.option_strings:
                command.options.append((option, action.help or ""))
        elif action.choices is not None and not isinstance(action, argparse._SubParsersAction):
            command.words += [str(c) for c in action.choices]
    sub = _subparsers(parser)
    if sub is not None:
        helps = {a.dest: a.help or "" for a in sub._choices_actions}
        for name, child in sub.choices.items():
            command.actions[name] = _command(child, helps.get(name, ""))
    return command


def commands() -> dict[str, Command]:
    """Every command of the CLI, from its parser (every plugin loaded)."""
    from triohooks.config.events import EVENTS, JSON_ALIASES

    from .cli import _parser

    top = _command(_parser(), "")
    # ``fire EVENT``: the events, by canonical name and JSON-dialect alias.
    if "fire" in top.actions:
        top.actions["fire"].words = sorted(set(EVENTS) | set(JSON_ALIASES))
    return top.actions


def _top_options() -> list[str]:
    return ["--help", "--version"]


def bash_script() -> str:
    """A bash completion function for ``triohooks`` and ``python -m triohooks``."""
    table = commands()
    cases: list[str] = []
    for name, command in sorted(table.items()):
        words = [o for o, _ in command.options] + ["--help"] + command.words
        actions = " ".join(sorted(command.actions))
        nested = ""
        if command.actions:
            inner = []
            for action, child in sorted(command.actions.items()):
                child_words = " ".join([o for o, _ in child.options] + ["--help"] + child.words)
                inner.append(f"            {action}) words={shlex.quote(child_words)} ;;")
            nested = (
                '        if [ -n "$action" ]; then\n'
                '            case "$action" in\n' + "\n".join(inner) + "\n"
                "            esac\n"
                "        else\n"
                f"            words={shlex.quote(actions + ' --help')}\n"
                "        fi\n"
            )
            cases.append(f"        {name})\n{nested}            ;;")
        else:
            cases.append(f"        {name}) words={shlex.quote(' '.join(words))} ;;")
    names = " ".join(sorted(table))
    return f"""# bash completion for triohooks (`triohooks completion bash`), made from its parser.
_triohooks() {{
    local cur command action words i
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    command=""
    action=""
    for ((i = 1; i < COMP_CWORD; i++)); do
        case "${{COMP_WORDS[i]}}" in
            -*) ;;
            *)
                if [ -z "$command" ]; then
                    command="${{COMP_WORDS[i]}}"
                elif [ -z "$action" ]; then
                    action="${{COMP_WORDS[i]}}"
                fi
                ;;
        esac
    done
    if [ -z "$command" ]; then
        words={shlex.quote(names + " " + " ".join(_top_options()))}
    else
        case "$command" in
{chr(10).join(cases)}
            *) words="" ;;
        esac
    fi
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
    case "$cur" in
        -*) ;;
        *) [ ${{#COMPREPLY[@]}} -eq 0 ] && compopt -o default 2>/dev/null ;;
    esac
    return 0
}}
complete -F _triohooks triohooks
"""


def zsh_script() -> str:
    """The bash function, through zsh's ``bashcompinit`` (load it with ``source``)."""
    return (
        "# zsh completion for triohooks (`triohooks completion zsh`): source it from ~/.zshrc.\n"
        "autoload -U +X compinit && compinit -C\n"
        "autoload -U +X bashcompinit && bashcompinit\n" + bash_script().split("\n", 1)[1]
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script() -> str:
    table = commands()
    lines = [
        "# fish completion for triohooks (`triohooks completion fish`); generated from its parser.",
        "complete -c triohooks -f",
        "complete -c triohooks -n __fish_use_subcommand -l version -d 'print the version'",
    ]
    for name, command in sorted(table.items()):
        lines.append(
            f"complete -c triohooks -n __fish_use_subcommand -a {name} "
            f"-d {_fish_quote(command.help)}"
        )
        seen = f"'__fish_seen_subcommand_from {name}'"
        lines += _fish_options(seen, command)
        if command.words:
            lines.append(
                f"complete -c triohooks -n {seen} -a {_fish_quote(' '.join(command.words))}"
            )
        for action, child in sorted(command.actions.items()):
            others = " ".join(a for a in command.actions if a != action)
            lines.append(
                f"complete -c triohooks -n '__fish_seen_subcommand_from {name}; and not "
                f"__fish_seen_subcommand_from {others or action}' -a {action} "
                f"-d {_fish_quote(child.help)}"
            )
            both = f"'__fish_seen_subcommand_from {name}; and __fish_seen_subcommand_from {action}'"
            lines += _fish_options(both, child)
    return "\n".join(lines) + "\n"


def _fish_options(condition: str, command: Command) -> list[str]:
    out = []
    for option, text in command.options:
        flag = f"-l {option[2:]}" if option.startswith("--") else f"-s {option[1:]}"
        out.append(f"complete -c triohooks -n {condition} {flag} -d {_fish_quote(text)}")
    return out


def cmd_completion(args: argparse.Namespace) -> int:
    script = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell]()
    sys.stdout.write(script)
    return 0
