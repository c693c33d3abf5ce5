"""What an install changed in each file it wrote, kept so that uninstall gives the file back.

An install changes each file in one place: a settings file's ``hooks`` value (or a ``hooks``
member it adds, or the whole file when there was none), Codex's ``config.toml`` (the review
tables it appends, or puts where your own stood, and a newline ending a last line that had
none). For each such file it keeps a :class:`Record` -- where the change starts, the text it
replaced, the text it wrote, a hash of the whole file as it left it -- in ``installed.json`` in
triohooks' config dir, under the settings file the install was for. Uninstall then
(:func:`undo`):

- the file is exactly as install left it: the replaced text goes back, byte for byte (a file
  the install created is removed);
- it was edited since, and what install wrote is still there, once, as written: only that is
  taken out -- the edits survive (a newline install added to end a last line stays when you
  wrote after it, so no two lines are joined);
- else, or with no record (a clone of someone else's install, another config dir), the caller
  undoes it the structural way, which also takes out only what is triohooks'.

Pure: :mod:`.adopt` reads and writes the store through its plans.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

import msgspec

from triohooks.config.paths import UnreadableFileError, read_regular_file

#: The records, in triohooks' config dir.
RECORDS_NAME: Final = "installed.json"
MAX_RECORDS_BYTES: Final = 8 * 1024 * 1024


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """One file's change by an install (text offsets)."""

    #: Where the change starts (the text before it is as it was).
    start: int
    #: The text install replaced there (``""``: it only added).
    replaced: str
    #: The text install wrote there.
    inserted: str
    #: sha256 of the whole file as install left it.
    after: str
    #: The file was not there before (uninstall removes it).
    created: bool = False
    #: The ``hooks`` member was not there before (install added it).
    member_added: bool = False
    #: sha256 of the ``triohooks-hooks.json`` the install wrote, for a settings file: the hooks
    #: go back as they are in it, so the record holds only while it is unchanged.
    moved: str | None = None
    #: For a settings file: the agent events its catch-alls route, as the install wrote them
    #: (the tamper alarm says one removed since; :mod:`.routing` says when they are stale).
    routed: tuple[str, ...] | None = None


#: Per settings file installed into: per file changed, its record.
Records = dict[str, dict[str, Record]]


class RecordsError(Exception):
    """The records file cannot be read; the message says which and why."""


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_records(config_dir: Path) -> Records:
    path = config_dir / RECORDS_NAME
    try:
        data = read_regular_file(path, MAX_RECORDS_BYTES)
    except FileNotFoundError:
        return {}
    except UnreadableFileError as exc:
        raise RecordsError(f"{path}: {exc}") from None
    try:
        return msgspec.json.decode(data, type=Records)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise RecordsError(f"{path}: not a triohooks install record ({exc})") from None


def encode_records(records: Records) -> bytes | None:
    """The records file's content, None when there is nothing to keep (it is removed)."""
    kept = {k: v for k, v in records.items() if v}
    if not kept:
        return None
    return msgspec.json.format(msgspec.json.encode(kept), indent=2) + b"\n"


def track(
    before: str | None,
    after: str,
    *,
    member_added: bool = False,
    moved: str | None = None,
    refresh: bool = False,
    earlier: Record | None = None,
    routed: tuple[str, ...] | None = None,
) -> Record | None:
    """The record of a change from ``before`` (None: no file) to ``after``: the one place
    between their common start and end. ``refresh``: this install refreshes an earlier one
    (``before`` holds triohooks' catch-alls): with ``earlier``, the record of that install,
    still matching ``before`` and the moved hooks (``moved``), the two make one change from
    the first ``before`` (uninstall still gives back the file as it was before either);
    without it, no record (``before`` is no state to go back to)."""
    if refresh and (
        earlier is None or earlier.after != digest(before or "") or earlier.moved != moved
    ):
        return None
    old = before or ""
    start = 0
    limit = min(len(old), len(after))
    while start < limit and old[start] == after[start]:
        start += 1
    tail = 0
    while tail < limit - start and old[-1 - tail] == after[-1 - tail]:
        tail += 1
    record = Record(
        start=start,
        replaced=old[start : len(old) - tail],
        inserted=after[start : len(after) - tail],
        after=digest(after),
        created=before is None,
        member_added=member_added,
        moved=moved,
        routed=routed,
    )
    return _compose(earlier, record, old, after) if earlier is not None else record


def _compose(first: Record, then: Record, middle: str, last: str) -> Record:
    """``first`` (the original -> ``middle``) then ``then`` (``middle`` -> ``last``), as one
    change: the union of the two places; outside ``first``'s, ``middle`` is the original."""
    f_end = first.start + len(first.inserted)
    t_end = then.start + len(then.replaced)
    start, end = min(first.start, then.start), max(f_end, t_end)
    replaced = middle[start : first.start] + first.replaced + middle[f_end:end]
    inserted = last[start : end + len(last) - len(middle)]
    return Record(
        start=start,
        replaced=replaced,
        inserted=inserted,
        after=then.after,
        created=first.created,
        member_added=first.member_added,
        moved=then.moved if then.moved is not None else first.moved,
        routed=then.routed,
    )


#: :func:`undo`'s answer when the record cannot undo the change (the caller's structural
#: way then does).
NOT_MINE: Final = "\x00not mine"


def undo(record: Record, current: str) -> str | None:
    """``current`` without the install's change: the text to write, None to remove the file
    (one install created, left as it wrote it), or :data:`NOT_MINE`."""
    if digest(current) == record.after:
        end = record.start + len(record.inserted)
        restored = current[: record.start] + record.replaced + current[end:]
        return None if record.created and not restored else restored
    if not record.inserted or current.count(record.inserted) != 1:
        return NOT_MINE
    at = current.index(record.inserted)
    head, tail = current[:at], current[at + len(record.inserted) :]
    ended = not record.replaced and record.inserted.startswith("\n") and head[-1:] not in "\n"
    if ended and tail[:1] not in "\n":  # install ended your last line and you wrote after it:
        return head + "\n" + tail  # the newline stays (the two lines are not joined)
    return head + record.replaced + tail
