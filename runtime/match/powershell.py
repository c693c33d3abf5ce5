"""A PowerShell command line read for the built-in guards and ``if`` rules: Copilot CLI's
``powershell`` tool (docs/builtin-guards.md, "PowerShell").

What it reads, and nothing more (a closed world: anything else is a doubt, which the guards
decide on purpose):

- statements separated by newlines, ``;``, ``|``, ``&&`` and ``||``; ``#`` comments; a
  backtick at the end of a line continues it;
- words: barewords, ``'single'`` (``''`` is a quote), ``"double"`` without ``$`` or backtick
  in them, ``-Param`` and ``-Param:value``; ``$HOME``, ``$env:HOME``, ``$env:USERPROFILE``
  and ``~`` are the home (``~``), ``$PWD`` the working directory (``.``); any other variable is
  a word known only at run time;
- redirects ``>``, ``>>``, ``2>``, ``*>`` (writes) and ``2>&1``;
- the cmdlets and aliases that delete, read, write, copy, move, list, change directory,
  download and run strings (:data:`_CMDLETS`), each read as the POSIX command that does the
  same, so every guard reads them with its one model of that command (``Remove-Item -Recurse
  -Force $HOME`` is ``rm -r -f -- ~``); a cmdlet that only shows or sorts what it is given is
  read as ``echo``; any other program is read as itself, its words as they are.

A doubt: a script block or expression (``{ }``, ``( )``, ``$( )``, ``@( )``, ``[type]``,
``::``, a variable's member), the call operator ``&`` or dot-sourcing ``.`` of anything but a
plain name, ``Invoke-Expression`` (its string is code), ``Start-Process``, ``Invoke-Command``,
a cmdlet we do not know (``Verb-Noun``), and a parameter of a known cmdlet we do not know.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from .shell import ParsedScript, ScriptWords, SimpleCommand, Word

#: A cmdlet, its aliases, what POSIX command it is read as, and its parameters: each with the
#: POSIX option it means ("" for none), whether it takes a value, and whether that value is a
#: path the command works on (the operands).
_Param = tuple[str, bool, bool]


class _Cmdlet:
    def __init__(self, posix: str, params: dict[str, _Param]) -> None:
        self.posix = posix
        #: By lowercase name (a unique prefix names one, as PowerShell reads it).
        self.params = params


_PATH: Final[_Param] = ("", True, True)
_VALUE: Final[_Param] = ("", True, False)
_FLAG: Final[_Param] = ("", False, False)
_COMMON: Final = {
    "force": _FLAG,
    "whatif": _FLAG,
    "confirm": _FLAG,
    "verbose": _FLAG,
    "erroraction": _VALUE,
    "encoding": _VALUE,
    "credential": _VALUE,
}

_DOWNLOAD: Final = _Cmdlet(
    "curl",
    {
        **_COMMON,
        "uri": _PATH,
        "outfile": ("-o", True, False),
        "usebasicparsing": _FLAG,
        "method": _VALUE,
        "headers": _VALUE,
        "body": _VALUE,
    },
)

_CMDLETS: Final[dict[str, _Cmdlet]] = {
    "remove-item": _Cmdlet(
        "rm",
        {
            **_COMMON,
            "path": _PATH,
            "literalpath": _PATH,
            "recurse": ("-r", False, False),
            "force": ("-f", False, False),
            "filter": _VALUE,
            "include": _VALUE,
            "exclude": _VALUE,
            "stream": _VALUE,
        },
    ),
    "get-content": _Cmdlet(
        "cat",
        {
            **_COMMON,
            "path": _PATH,
            "literalpath": _PATH,
            "totalcount": _VALUE,
            "head": _VALUE,
            "tail": _VALUE,
            "raw": _FLAG,
            "wait": _FLAG,
            "delimiter": _VALUE,
            "readcount": _VALUE,
        },
    ),
    "select-string": _Cmdlet(
        "cat",  # its first operand is the pattern, read as a path too (it may be one)
        {
            **_COMMON,
            "path": _PATH,
            "literalpath": _PATH,
            "pattern": _VALUE,
            "simplematch": _FLAG,
            "casesensitive": _FLAG,
            "context": _VALUE,
            "notmatch": _FLAG,
            "list": _FLAG,
            "quiet": _FLAG,
        },
    ),
    "set-content": _Cmdlet(
        "tee", {**_COMMON, "path": _PATH, "literalpath": _PATH, "value": _VALUE}
    ),
    "add-content": _Cmdlet(
        "tee", {**_COMMON, "path": _PATH, "literalpath": _PATH, "value": _VALUE}
    ),
    "out-file": _Cmdlet(
        "tee",
        {**_COMMON, "filepath": _PATH, "literalpath": _PATH, "append": _FLAG, "noclobber": _FLAG},
    ),
    "tee-object": _Cmdlet("tee", {**_COMMON, "filepath": _PATH, "append": _FLAG}),
    "new-item": _Cmdlet(
        "touch",
        {**_COMMON, "path": _PATH, "name": _PATH, "itemtype": _VALUE, "value": _VALUE},
    ),
    "copy-item": _Cmdlet(
        "cp",
        {
            **_COMMON,
            "path": _PATH,
            "literalpath": _PATH,
            "destination": _PATH,
            "recurse": ("-r", False, False),
            "container": _FLAG,
            "filter": _VALUE,
            "include": _VALUE,
            "exclude": _VALUE,
        },
    ),
    "move-item": _Cmdlet(
        "mv", {**_COMMON, "path": _PATH, "literalpath": _PATH, "destination": _PATH}
    ),
    "set-location": _Cmdlet("cd", {"path": _PATH, "literalpath": _PATH}),
    "push-location": _Cmdlet("pushd", {"path": _PATH, "literalpath": _PATH}),
    "get-childitem": _Cmdlet(
        "ls",
        {
            **_COMMON,
            "path": _PATH,
            "literalpath": _PATH,
            "recurse": _FLAG,
            "filter": _VALUE,
            "include": _VALUE,
            "exclude": _VALUE,
            "name": _FLAG,
            "file": _FLAG,
            "directory": _FLAG,
            "hidden": _FLAG,
            "depth": _VALUE,
        },
    ),
    "get-item": _Cmdlet("ls", {**_COMMON, "path": _PATH, "literalpath": _PATH}),
    "test-path": _Cmdlet("ls", {"path": _PATH, "literalpath": _PATH, "pathtype": _VALUE}),
    "resolve-path": _Cmdlet("ls", {"path": _PATH, "literalpath": _PATH, "relative": _FLAG}),
    "invoke-webrequest": _DOWNLOAD,
    "invoke-restmethod": _DOWNLOAD,
}
_ALIASES: Final = {
    **dict.fromkeys(("rm", "del", "erase", "rd", "rmdir", "ri"), "remove-item"),
    **dict.fromkeys(("gc", "cat", "type"), "get-content"),
    "sls": "select-string",
    "sc": "set-content",
    "ac": "add-content",
    "tee": "tee-object",
    "ni": "new-item",
    **dict.fromkeys(("copy", "cp", "cpi"), "copy-item"),
    **dict.fromkeys(("move", "mv", "mi"), "move-item"),
    **dict.fromkeys(("cd", "sl", "chdir"), "set-location"),
    "pushd": "push-location",
    **dict.fromkeys(("ls", "dir", "gci"), "get-childitem"),
    "gi": "get-item",
    **dict.fromkeys(("iwr", "curl", "wget"), "invoke-webrequest"),
    "irm": "invoke-restmethod",
}
#: Cmdlets that run nothing and touch no file: read as ``echo``.
_SHOWS: Final = frozenset(
    """
    write-output write-host write-error write-warning write-verbose echo write get-date
    get-location pwd gl get-process ps gps get-command gcm get-help help clear-host cls clear
    measure-object measure sort-object sort select-object select format-table ft format-list
    fl format-wide fw out-host out-string out-null get-unique gu start-sleep sleep
    get-variable gv get-alias gal get-host get-culture get-member gm popd pop-location
    """.split()
)
#: What runs code we cannot read.
_RUNS_CODE: Final = {
    "invoke-expression": "Invoke-Expression runs a string as PowerShell code",
    "iex": "Invoke-Expression runs a string as PowerShell code",
    "start-process": "Start-Process runs a program with arguments we do not read",
    "start": "Start-Process runs a program with arguments we do not read",
    "saps": "Start-Process runs a program with arguments we do not read",
    "invoke-command": "Invoke-Command runs a script block",
    "icm": "Invoke-Command runs a script block",
    "invoke-item": "Invoke-Item opens a file with whatever program handles it",
    "ii": "Invoke-Item opens a file with whatever program handles it",
}
_STRING_RUNNERS: Final = frozenset({"iex", "invoke-expression"})
_HOME_VARIABLES: Final = re.compile(r"\$(?:HOME|env:HOME|env:USERPROFILE)(?=$|[\\/])", re.I)
_PWD_VARIABLE: Final = re.compile(r"\$PWD(?=$|[\\/])", re.I)
_VERB_NOUN: Final = re.compile(r"[A-Za-z]+-[A-Za-z]+")
#: Characters that end a bareword.
_BREAK: Final = frozenset(" \t\r\n;|&(){}<>,")


class _Doubt(Exception):
    pass


@functools.lru_cache(maxsize=256)
def read_powershell(text: str) -> ScriptWords:
    """The commands a PowerShell command line runs, as :func:`~.shell.read_words` gives a
    bash script's: each statement's words as the POSIX command it is read as, its doubts,
    and its redirects."""
    commands: list[SimpleCommand] = []
    doubts: list[str] = []
    written: list[tuple[Word, int]] = []
    other: list[Word] = []
    try:
        statements = _statements(text)
    except _Doubt as exc:
        return ScriptWords(error=f"cannot read the PowerShell: {exc}")
    for words, redirects, piped in statements:
        for target in redirects:
            other.append(target)
            written.append((target, len(commands)))
        try:
            command = _command(words, piped)
        except _Doubt as exc:
            doubts.append(f"{words[0] or 'PowerShell'}: {exc}")
            if (words[0] or "").lower() in _STRING_RUNNERS:  # seen by pipe_to_shell as such
                commands.append(SimpleCommand(("iex", *words[1:])))
            continue
        if command is not None:
            commands.append(SimpleCommand(command))
    return ScriptWords(
        tuple(commands),
        (),
        tuple(other),
        tuple(doubts),
        written=tuple(written),
    )


def parse_powershell(text: str) -> ParsedScript:
    """The same reading for an ``if`` rule: its commands, or uncertain at the first doubt."""
    read = read_powershell(text)
    if read.error or read.doubts:
        return ParsedScript(read.commands, uncertain=True, reason=read.error or read.doubts[0])
    return ParsedScript(read.commands)


def _statements(text: str) -> list[tuple[list[Word], list[Word], bool]]:
    """The statements of ``text``: each its words, its redirect targets, and whether a ``|``
    feeds it."""
    out: list[tuple[list[Word], list[Word], bool]] = []
    words: list[Word] = []
    redirects: list[Word] = []
    piped = False
    i, n = 0, len(text)

    def end(pipe: bool) -> None:
        nonlocal words, redirects, piped
        if words:
            out.append((words, redirects, piped))
        elif redirects:
            raise _Doubt("a redirect without a command")
        words, redirects, piped = [], [], pipe

    while i < n:
        c = text[i]
        if c in " \t\r":
            i += 1
        elif c == "`" and text[i + 1 : i + 2] == "\n":
            i += 2
        elif c in "\n;|" or text.startswith(("&&", "||"), i):
            end(c == "|" and not text.startswith("||", i))
            i += 2 if text.startswith(("&&", "||"), i) else 1
        elif c == "#":
            if text.startswith("<#", i - 1):
                raise _Doubt("a block comment")
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("<#", i):
            raise _Doubt("a block comment")
        elif c == ">" or (c in "0123456789*" and text[i + 1 : i + 2] == ">"):
            i = _redirect(text, i, redirects)
        elif c == "<":
            raise _Doubt("an input redirect")
        elif c in "(){}@[" or text.startswith("$(", i) or text.startswith("::", i):
            raise _Doubt("a script block or expression")
        elif c == "&" and not words:
            raise _Doubt("the call operator &")
        elif c == "&":
            raise _Doubt("a background job")
        else:
            word, after = _word(text, i)
            if after == i:  # a character no word starts with (``,`` an array)
                raise _Doubt(f"{c!r} outside a word")
            words.append(word)
            i = after
    end(False)
    return out


def _redirect(text: str, i: int, redirects: list[Word]) -> int:
    """A redirect at ``i``: its target added when it writes a file; the index after it."""
    j = i
    while j < len(text) and text[j] in "0123456789*>":
        j += 1
    if text.startswith("&1", j) or text.startswith("&2", j):
        return j + 2
    while j < len(text) and text[j] in " \t":
        j += 1
    if j >= len(text) or text[j] in "\n;|":
        raise _Doubt("a redirect without a target")
    target, end = _word(text, j)
    if end == j:
        raise _Doubt("a redirect without a target")
    redirects.append(target)
    return end


def _word(text: str, i: int) -> tuple[Word, int]:
    """The word at ``i`` (None when known only at run time) and the index after it."""
    out: list[str] = []
    dynamic = False
    n = len(text)
    while i < n and text[i] not in _BREAK:
        c = text[i]
        if c == "'":
            j = i + 1
            while True:
                k = text.find("'", j)
                if k < 0:
                    raise _Doubt("an unterminated quote")
                if text.startswith("''", k):
                    out.append(text[j:k] + "'")
                    j = k + 2
                    continue
                out.append(text[j:k])
                i = k + 1
                break
        elif c == '"':
            k = text.find('"', i + 1)
            if k < 0:
                raise _Doubt("an unterminated quote")
            inner = text[i + 1 : k]
            inner = _HOME_VARIABLES.sub("~", inner) if inner.startswith("$") else inner
            if "$" in inner or "`" in inner:
                dynamic = True
            out.append(inner)
            i = k + 1
        elif c == "$":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] in "_:"):
                j += 1
            variable = text[i:j]
            rest = text[j : j + 1]
            if rest in (".", "[", "("):
                raise _Doubt(f"an expression on {variable}")
            if _HOME_VARIABLES.fullmatch(variable) and not out:
                out.append("~")
            elif _PWD_VARIABLE.fullmatch(variable) and not out:
                out.append(".")
            elif variable.lower() == "$null":
                out.append("/dev/null")
            else:
                dynamic = True
            i = j
        elif c == "`":
            raise _Doubt("a backtick escape")
        else:
            out.append(c)
            i += 1
    word = "".join(out)
    return (None if dynamic else word), i


def _slashes(path: Word) -> Word:
    """A PowerShell path with ``\\`` read as the ``/`` it also is (``.\\i.ps1``)."""
    return None if path is None else path.replace("\\", "/")


def _command(words: list[Word], piped: bool = False) -> tuple[Word, ...] | None:
    """A statement as the POSIX command it is read as (None: it runs nothing). A cmdlet a
    ``|`` feeds may take its paths from the pipeline (``Get-ChildItem | Remove-Item``): one
    more operand, known only at run time."""
    name = words[0]
    if name is None:
        raise _Doubt("a command name known only at run time")
    key = name.lower().removesuffix(".exe")
    if key in _RUNS_CODE:
        raise _Doubt(_RUNS_CODE[key])
    if key == "." or key.startswith("$"):
        raise _Doubt("dot-sourcing or an expression")
    if key in _SHOWS:
        return ("echo", *words[1:])
    cmdlet = _CMDLETS.get(_ALIASES.get(key, key))
    if cmdlet is None:
        if _VERB_NOUN.fullmatch(key):
            raise _Doubt(f"{name} is a cmdlet we do not read")
        return (_slashes(name), *words[1:])  # a program: its words as they are
    options: list[str] = []
    paths: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        if word is None or not word.startswith("-") or len(word) < 2:
            paths.append(_slashes(word))  # its operands (Remove-Item x, Copy-Item a b)
            continue
        given, colon, attached = word[1:].partition(":")
        matched = [p for p in cmdlet.params if p.startswith(given.lower())]
        if given.lower() in cmdlet.params:
            matched = [given.lower()]
        if len(matched) != 1:
            raise _Doubt(f"{name} -{given} is not a parameter we know")
        option, takes, is_path = cmdlet.params[matched[0]]
        value: Word = attached if colon else None
        if takes and not colon:
            if i >= len(words):
                raise _Doubt(f"{name} -{given} without its value")
            value = words[i]
            i += 1
        if option:
            options.append(option)
            if takes:
                options.append(value if value is not None else "")
        if is_path:
            paths.append(_slashes(value))
    if cmdlet.posix == "curl":  # its operands are URLs
        return ("curl", *options, *paths)
    if piped:
        paths.append(None)
    return (cmdlet.posix, *options, "--", *paths)
