"""When a table must be read again: the one freshness rule of every table.

Every table triohooks answers from -- the engine's own, another project's in ``serve`` (which
also answers ``triohooks fire``), an agent's settings -- keeps the :func:`signature` of every
path it was built from, taken *before* the path was read: the config files it read or looked
for, the trust store, and everything trust covers (each file a hook names, as named and as
resolved; each directory it listed; each named path that did not exist). Before an event is answered
from the table, the signatures are taken again (:func:`unchanged`); any difference -- an edit,
a file created at a path a hook names, a symlink pointed elsewhere, a trust decision made by
another process -- and the table is built again first, so the event is judged on what is there
now. There is no file watcher and no grace period: a long-lived ``serve`` and a fresh
``triohooks list`` always agree.

A signature is ``stat`` and ``lstat`` of the path: device, inode, mode, size, mtime and ctime
in ns, or its absence (``"absent"``) or the error (``"errno N"``). ``stat`` follows every link
on the way, so a file or directory anywhere in the path pointed elsewhere shows as another
inode; ``lstat`` shows the last link itself re-made. Taken before the read, a change during
the read shows at the next check. File times are coarse (a clock tick on Linux, 2 s on FAT):
two writes within one tick can leave the same times and size. So a path whose times are within
:data:`SETTLE_NS` of when its signature was taken also gets its content in the signature (a
file's SHA-256, a directory's names, a link's target), which the check compares too.

Standard library only, lists and strings only (``fire``'s cache imports it before anything
else and keeps signatures as JSON).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable, Sequence

#: A path changed less than this before its signature was taken may change again without its
#: times showing it (file times are coarse; FAT keeps mtimes to 2 s): its content is kept too.
SETTLE_NS = 2_000_000_000
#: A file recently changed and bigger than this is not read for its signature: "unsettled",
#: which no later signature equals (the table is read again until it settles).
MAX_CONTENT_BYTES = 1024 * 1024
#: One ``stat`` result as a signature keeps it, or why there is none.
Part = list[int] | str
#: ``[path, stat part, lstat part]``, plus the content for a path that had just changed.
Signature = list[object]


def _stat(call: object, path: str) -> os.stat_result | str:
    try:
        return call(path)  # type: ignore[operator, no-any-return]
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    except OSError as exc:
        return f"errno {exc.errno}"
    except ValueError:  # a NUL in the path: nothing can be there
        return "absent"


def _both(path: str) -> tuple[os.stat_result | str, os.stat_result | str]:
    """``stat`` and ``lstat`` of ``path`` in one system call where they are the same: only a
    path whose last component is a link needs the second (``lstat`` follows every link before
    it)."""
    link = _stat(os.lstat, path)
    if isinstance(link, str) or not stat.S_ISLNK(link.st_mode):
        return link, link
    return _stat(os.stat, path), link


def _part(st: os.stat_result | str) -> Part:
    if isinstance(st, str):
        return st
    return [st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _content(path: str, st: os.stat_result | str, link: os.stat_result | str) -> str:
    """What is at ``path`` now, for a path whose times cannot tell a second change from the
    first: a link's target, a directory's names, a regular file's SHA-256."""
    import hashlib  # only for a path changed lately (3 ms of OpenSSL off fire's fast path)

    parts: list[str] = []
    if not isinstance(link, str) and stat.S_ISLNK(link.st_mode):
        try:
            parts.append("link:" + os.readlink(path))
        except OSError as exc:
            parts.append(f"link:errno {exc.errno}")
    if isinstance(st, str):
        return "|".join([*parts, st])
    if stat.S_ISDIR(st.st_mode):
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            return "|".join([*parts, f"dir:errno {exc.errno}"])
        digest = hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape"))
        return "|".join([*parts, "dir:" + digest.hexdigest()])
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONTENT_BYTES:
        return "|".join([*parts, "unsettled"])
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return "|".join([*parts, f"file:errno {exc.errno}"])
    try:
        data = os.read(fd, MAX_CONTENT_BYTES + 1)
    except OSError as exc:
        return "|".join([*parts, f"file:errno {exc.errno}"])
    finally:
        os.close(fd)
    return "|".join([*parts, "file:" + hashlib.sha256(data).hexdigest()])


def signature(path: str, now_ns: int | None = None, settle_ns: int = SETTLE_NS) -> Signature:
    """``[path, stat, lstat]`` of ``path`` as it is now, and its content when it changed
    within ``settle_ns`` before ``now_ns`` (default: now)."""
    st, link = _both(path)
    out: Signature = [path, _part(st), _part(link)]
    limit = (time.time_ns() if now_ns is None else now_ns) - settle_ns
    if any(
        not isinstance(s, str) and (s.st_mtime_ns >= limit or s.st_ctime_ns >= limit)
        for s in (st, link)
    ):
        out.append(_content(path, st, link))
    return out


def signatures(paths: Iterable[str], settle_ns: int = SETTLE_NS) -> list[Signature]:
    """:func:`signature` of each path, in order, each path once."""
    now = time.time_ns()
    return [signature(p, now, settle_ns) for p in dict.fromkeys(paths)]


def unchanged(taken: Sequence[Signature]) -> bool:
    """Whether every path in ``taken`` is still what it was when its signature was taken (a
    ``stat`` and an ``lstat`` each; the content too where the times could not tell). A path
    whose content is in its signature and whose times have settled since is reported changed
    once, so that the next build takes a signature of times alone. The per-event check of
    every table: one system call per path that is not a link."""
    limit = 0
    for sig in taken:
        path = str(sig[0])
        # Still nothing there (not even a dangling link): no exception to raise and catch.
        absent = sig[2] == "absent" and len(sig) == 3
        if absent and not os.access(path, os.F_OK, follow_symlinks=False):
            continue
        st, link = _both(path)
        now = _part(link)
        if now != sig[2] or (_part(st) if st is not link else now) != sig[1]:
            return False
        if len(sig) > 3:
            content = str(sig[3])
            if content.endswith("unsettled") or _content(path, st, link) != content:
                return False
            limit = limit or time.time_ns() - SETTLE_NS
            if not any(
                not isinstance(s, str) and (s.st_mtime_ns >= limit or s.st_ctime_ns >= limit)
                for s in (st, link)
            ):
                return False  # settled now: read again once, for a signature of times alone
    return True


def exists(sig: Signature) -> bool:
    """Whether the path was there (following links) when ``sig`` was taken."""
    return isinstance(sig[1], list)
