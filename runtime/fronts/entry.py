"""The ``triohooks`` command's first stop: a ``fire`` whose answer the quiet-call cache holds
is answered here, by the standard library alone (:mod:`.fire_cache`); anything else goes on to
the command line proper (:mod:`.cli`), with the stdin already read handed over.

It must not import anything at module level but the standard library and :mod:`.fire_cache`.
"""

from __future__ import annotations

import os
import sys

from . import fire_cache

#: The exit status of a command whose reader went away (``triohooks list | head -1``): what a
#: shell reports for a process SIGPIPE ended.
EXIT_STDOUT_GONE = 141


def stdout_gone() -> None:
    """Standard output's reader is gone: send what is still buffered, and anything written
    later, to /dev/null, so nothing raises again (at exit either)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def main() -> int:
    """The command line, ending quietly when its reader closes standard output first."""
    try:
        return _main()
    except BrokenPipeError:
        stdout_gone()
        return EXIT_STDOUT_GONE


def _main() -> int:
    argv = sys.argv[1:]
    if fire_cache.eligible_event(argv) is not None:
        try:
            data = fire_cache.read_stdin()
        except KeyboardInterrupt:  # as the command line answers Ctrl-C
            return 130
        fire_cache.preloaded_stdin = data
        out = fire_cache.answer(argv, os.environ, data)
        if out is not None:
            sys.stdout.write(out)
            return 0
    from .cli import main as cli_main

    return cli_main(argv)
