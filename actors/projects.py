"""The hooks of other projects than the engine's own, for agents' requests through one serve.

A ``serve`` (the one the relays start works in the state directory) answers agent requests
from many projects. Each project's own triohooks hooks (``.agents/``, once trusted) are its
own: :class:`ProjectDispatchers` keeps one :class:`~triohooks.actors.dispatcher.Dispatcher` per
project (its own loader and run observer, judged in that project), sharing the engine's post
worker, process guard, audit sink, listeners and API hooks. The per-event path is the
dispatcher's own, unchanged: a project's table is read on first use, and read again before any
event when a file it was built from changed (the freshness rule of every table,
:meth:`~triohooks.actors.loader.Loader.current`); at most :data:`MAX_PROJECTS` are kept (the
least recently used goes).
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Final

from triohooks.config.model import ConfigError, ConfigProblem

from .dispatcher import Dispatcher
from .loader import Loader

log = logging.getLogger("triohooks.projects")

#: Projects kept (each a loaded table and its dispatcher).
MAX_PROJECTS: Final = 32


class ProjectUnreadable(Exception):
    """A project's own config has errors: its hooks cannot run (the message says the first;
    ``problems`` holds them all)."""

    def __init__(self, message: str, problems: tuple[ConfigProblem, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class ProjectDispatchers:
    """One dispatcher per project; see the module docstring."""

    def __init__(
        self,
        main: Dispatcher,
        make: Callable[[Loader], Dispatcher],
        *,
        config_dir: Path | None,
        extra_configs: tuple[Path, ...],
        trust_override: bool,
    ) -> None:
        self.main = main
        self._make = make
        self._config_dir = config_dir
        self._extra_configs = extra_configs
        self._trust_override = trust_override
        self._entries: OrderedDict[str, Dispatcher] = OrderedDict()
        self._root = os.path.realpath(main.workspace)

    def is_main(self, project: str) -> bool:
        """Whether ``project`` (a real path) is the engine's own workspace."""
        return project == self._root

    async def for_project(self, project: str) -> Dispatcher:
        """The dispatcher of ``project`` (a real path). Raises :class:`ProjectUnreadable` when
        its config has errors (a TOML file that does not load)."""
        if self.is_main(project):
            return self.main
        known = self._entries.get(project)
        if known is not None:
            self._entries.move_to_end(project)
            return known
        loader = Loader(
            workspace=Path(project),
            config_dir=self._config_dir,
            extra_configs=self._extra_configs,
            trust_override=self._trust_override,
        )
        try:
            await loader.load_initial()
        except ConfigError as exc:
            raise ProjectUnreadable(_first(exc.problems), tuple(exc.problems)) from None
        dispatcher = self._make(loader)
        if len(self._entries) >= MAX_PROJECTS:
            self._entries.popitem(last=False)
        self._entries[project] = dispatcher
        return dispatcher


def _first(problems: object) -> str:
    found = list(problems) if isinstance(problems, (list, tuple)) else []
    return str(found[0]) if found else "its config has errors"
