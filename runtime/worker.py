"""Write a warm worker in a few lines (docs/hook-protocol.md, "Warm workers").

A command hook with ``worker = true`` (TOML) or ``"worker": true`` (JSON executor) is started
once and kept: per event triohooks writes one request line to its stdin and reads one reply
line ``{"exit": N, "stdout": "...", "stderr": "..."}`` from its stdout, which it then reads as a
one-shot run that exited with N and printed that output. This module is the hook author's side
of that protocol::

    from triohooks.worker import block, serve

    def handle(event):
        if "rm -rf" in event.get("args", {}).get("command", ""):
            return block("no rm -rf, please")
        return None  # no opinion

    serve(handle)

The handler gets, per request, the event object (TOML dialect) or a :class:`Request` (JSON
dialect: the ``EVERRUNS_HOOK_*`` variables, the parsed payload), and returns a reply:
``None`` / :func:`no_opinion` (exit 0, nothing printed), :func:`block` (either dialect's way
of blocking), a dict or :func:`reply` (exit 0, the object as JSON on stdout: a TOML reply, or
an everruns ``{"decision": ...}``), :func:`decision` / :func:`mutate` (everruns replies), or a
:class:`Reply` for full control.

What :func:`serve` guarantees: exactly one reply line per request line, written with one write
and a flush; the protocol's stdout is private (``print`` in the handler, and any program it
starts, write to stderr instead; stdin reads as empty); a handler exception or a request that
is not JSON is answered with exit 1 and the reason on stderr, and the worker keeps serving; EOF
on stdin ends :func:`serve`. Started without ``TRIOHOOKS_WORKER=1`` (the hook is configured
without ``worker = true``), :func:`serve` answers the one event one-shot style instead, so the
same file works both ways.

Standard library only, and no other triohooks module (nor Trio): a worker's start-up stays
small, and the file works as a copy beside a hook whose Python does not have triohooks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Final, Literal

__all__ = [
    "MAX_REPLY_LINE",
    "WORKER_ENV",
    "Block",
    "Event",
    "Handler",
    "Reply",
    "Request",
    "Result",
    "block",
    "decision",
    "mutate",
    "no_opinion",
    "reply",
    "respond",
    "serve",
]

#: Set to ``"1"`` in a warm worker's environment by triohooks.
WORKER_ENV: Final = "TRIOHOOKS_WORKER"
#: The longest reply line triohooks reads (without its newline); a longer one is a bad reply
#: (the worker is killed), so :func:`serve` answers exit 1 instead of writing it.
MAX_REPLY_LINE: Final = 1024 * 1024
#: Of a handler's traceback, the last this many characters go into the reply's stderr.
TRACEBACK_KEEP: Final = 16 * 1024

#: The prefix of the JSON dialect's per-event variables.
_VAR_PREFIX: Final = "EVERRUNS_HOOK_"
_PAYLOAD_JSON: Final = "EVERRUNS_HOOK_PAYLOAD_JSON"
_PAYLOAD_PATH: Final = "EVERRUNS_HOOK_PAYLOAD_PATH"
_ME: Final = "triohooks.worker"
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

#: A TOML-dialect request: the event object a one-shot hook reads on stdin.
Event = dict[str, Any]


# -- replies -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One reply as the one-shot run it stands for: its exit code and what it printed."""

    exit: int = 0
    stdout: str = ""
    stderr: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.exit, bool) or not isinstance(self.exit, int):
            raise TypeError(f"Reply.exit must be an int, not {type(self.exit).__name__}")
        if not 0 <= self.exit <= 255:
            raise ValueError(f"Reply.exit must be 0..255, not {self.exit}")
        for name in ("stdout", "stderr"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Reply.{name} must be a str, not {type(value).__name__}")

    def line(self) -> bytes:
        """The reply line: compact JSON, empty streams left out, ending in a newline."""
        obj: dict[str, Any] = {"exit": self.exit}
        if self.stdout:
            obj["stdout"] = _valid_text(self.stdout)
        if self.stderr:
            obj["stderr"] = _valid_text(self.stderr)
        return _compact(obj).encode() + b"\n"


@dataclass(frozen=True)
class Block:
    """Block the event, the way the request's dialect blocks: TOML exit 2 with the reason on
    stderr; JSON ``{"decision": "block", "reason": ...}`` on stdout. Made by :func:`block`."""

    reason: str = ""


#: What a handler may return.
Result = Reply | Block | Mapping[str, Any] | None
#: A handler: the event dict (TOML dialect) or a :class:`Request` (JSON dialect) -> a reply.
Handler = Callable[[Any], Result]


def no_opinion() -> Reply:
    """Exit 0, nothing printed: no opinion (TOML), allow (JSON). Same as returning None."""
    return Reply()


def block(reason: str = "") -> Block:
    """Block, in either dialect. An empty reason reads ``blocked by hook`` (TOML) or ``hook
    blocked`` (JSON)."""
    return Block(str(reason))


def reply(fields: Mapping[str, Any] | None = None, /, **more: Any) -> Reply:
    """Exit 0 with one JSON object on stdout: a TOML-dialect reply (``decision``, ``reason``,
    ``continue``, ``additional_context``, ``updated_args``, ``system_message``), or an everruns
    one. ``reply({"continue": True})`` and ``reply(additional_context="...")`` both work."""
    obj = {**(fields or {}), **more}
    return Reply(stdout=_compact(obj))


def decision(
    kind: Literal["allow", "block", "mutate"],
    *,
    reason: str | None = None,
    user_message: str | None = None,
    patch: Mapping[str, Any] | None = None,
) -> Reply:
    """A JSON-dialect (everruns) reply: ``{"decision", "reason", "user_message", "patch"}`` on
    stdout, exit 0. ``mutate`` needs a ``patch``; the others take none."""
    if kind not in ("allow", "block", "mutate"):
        raise ValueError(f"decision must be allow, block or mutate, not {kind!r}")
    if (patch is None) == (kind == "mutate"):
        raise ValueError("mutate needs a patch" if patch is None else f"{kind} takes no patch")
    obj: dict[str, Any] = {"decision": kind}
    if reason is not None:
        obj["reason"] = reason
    if user_message is not None:
        obj["user_message"] = user_message
    if patch is not None:
        obj["patch"] = dict(patch)
    return Reply(stdout=_compact(obj))


def mutate(
    patch: Mapping[str, Any], *, reason: str | None = None, user_message: str | None = None
) -> Reply:
    """JSON dialect: ``{"decision": "mutate", "patch": patch}`` (``patch.arguments`` merged
    into a tool's arguments, ``patch.message`` a new prompt, ...)."""
    return decision("mutate", reason=reason, user_message=user_message, patch=patch)


# -- requests ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A JSON-dialect request: the per-event ``EVERRUNS_HOOK_*`` variables a one-shot hook
    would get, and the payload ``{event, hook_id, session_id, turn_id, ts, data}`` parsed from
    ``EVERRUNS_HOOK_PAYLOAD_JSON`` (or, when that was left out for size, read from the file at
    ``EVERRUNS_HOOK_PAYLOAD_PATH``)."""

    env: Mapping[str, str]
    payload: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Request:
        """The request for these variables; ``ValueError`` when the payload is unreadable."""
        raw: str | bytes | None = env.get(_PAYLOAD_JSON)
        if raw is None and env.get(_PAYLOAD_PATH):
            try:
                with open(env[_PAYLOAD_PATH], "rb") as f:
                    raw = f.read()
            except OSError as exc:
                raise ValueError(f"cannot read {_PAYLOAD_PATH}: {exc}") from None
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError as exc:
            raise ValueError(f"the payload is not JSON: {exc}") from None
        if not isinstance(payload, dict):
            raise ValueError(f"the payload is not a JSON object: {type(payload).__name__}")
        return cls(env=dict(env), payload=payload)

    def _var(self, name: str) -> str | None:
        return self.env.get(_VAR_PREFIX + name) or None

    @property
    def event(self) -> str:
        """``pre_tool_use``, ``post_tool_use``, ``user_prompt_submit``, ``session_start``,
        ``turn_end`` or ``session_end`` (or the alias the hook's config used)."""
        return self._var("EVENT") or str(self.payload.get("event") or "")

    @property
    def hook_id(self) -> str | None:
        return self._var("ID")

    @property
    def session_id(self) -> str | None:
        return self._var("SESSION_ID")

    @property
    def turn_id(self) -> str | None:
        return self._var("TURN_ID")

    @property
    def tool_name(self) -> str | None:
        """Tool events only."""
        return self._var("TOOL_NAME")

    @property
    def tool_call_id(self) -> str | None:
        return self._var("TOOL_CALL_ID")

    @property
    def payload_path(self) -> str | None:
        """The private payload file (it exists while the request is answered)."""
        return self._var("PAYLOAD_PATH")

    @property
    def data(self) -> dict[str, Any]:
        """The payload's ``data``: ``tool_name, tool_call_id, arguments`` (and ``result,
        error, success`` after the tool) on tool events, ``message`` for a prompt."""
        data = self.payload.get("data")
        return data if isinstance(data, dict) else {}

    @property
    def arguments(self) -> dict[str, Any]:
        """The tool's arguments (``{}`` when not a tool event)."""
        args = self.data.get("arguments")
        return args if isinstance(args, dict) else {}

    @property
    def message(self) -> str | None:
        """The prompt, on ``user_prompt_submit``."""
        message = self.data.get("message")
        return message if isinstance(message, str) else None


# -- answering one request ---------------------------------------------------------------------


def respond(handler: Handler, line: str | bytes) -> str:
    """The reply line (with its newline) that :func:`serve` writes for one request line: for
    trying a handler without a process."""
    data = line.encode("utf-8", errors="surrogatepass") if isinstance(line, str) else line
    return _answer(handler, data).decode()


def _answer(handler: Handler, line: bytes) -> bytes:
    """One request line in, one reply line out; never raises (but KeyboardInterrupt)."""
    try:
        request = _decode(line)
    except ValueError as exc:
        return Reply(1, stderr=f"{_ME}: bad request line: {exc}\n").line()
    answer = _call(handler, request).line()
    if len(answer) - 1 > MAX_REPLY_LINE:
        why = f"the reply is {len(answer) - 1} bytes, over the {MAX_REPLY_LINE}-byte line limit"
        return Reply(1, stderr=f"{_ME}: {why}\n").line()
    return answer


def _decode(line: bytes) -> Event | Request:
    """The handler's argument for a request line; ``ValueError`` saying why there is none."""
    try:
        obj = json.loads(line.decode())
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc}): {line[:80]!r}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object but {type(obj).__name__}")
    if "env" in obj and "event" not in obj:  # the JSON dialect's {"env": {...}}
        env = obj["env"]
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise ValueError('"env" is not an object of strings')
        return Request.from_env(env)
    return obj


def _call(handler: Handler, request: Event | Request) -> Reply:
    """The handler's reply, as the request's dialect reads it; exit 1 with the traceback when
    the handler raises (or returns something that is not a reply)."""
    try:
        with contextlib.redirect_stdout(sys.stderr):
            result = handler(request)
        return _render(result, json_dialect=isinstance(request, Request))
    except (Exception, SystemExit) as exc:
        import traceback  # only when needed: it is a slow import

        # The error first: failure messages quote the head of stderr.
        summary = "".join(traceback.format_exception_only(exc)).strip()
        text = traceback.format_exc()
        if len(text) > TRACEBACK_KEEP:
            text = "...\n" + text[-TRACEBACK_KEEP:]
        return Reply(1, stderr=f"{_ME}: the handler raised {summary}\n{text}")
    finally:
        _flush(sys.stdout, sys.stderr)


def _render(result: object, *, json_dialect: bool) -> Reply:
    if result is None:
        return Reply()
    if isinstance(result, Reply):
        reply_ = result
    elif isinstance(result, Block):
        if json_dialect:
            reply_ = decision("block", reason=result.reason or None)
        else:
            reply_ = Reply(2, stderr=result.reason)
    elif isinstance(result, Mapping):
        reply_ = reply(result)
    else:
        if isinstance(result, Coroutine):
            result.close()  # no "never awaited" warning on top of this error
            raise TypeError("the handler returned a coroutine: it must be a plain function")
        raise TypeError(
            f"the handler returned {type(result).__name__}: "
            "return a Reply, block(...), a dict or None"
        )
    return reply_


# -- serving -----------------------------------------------------------------------------------


def serve(
    handler: Handler, *, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Answer request lines with ``handler`` until EOF on stdin, then return.

    Without ``stdin``/``stdout``, the process's own: file descriptor 1 becomes a copy of 2 and
    0 reads ``/dev/null`` while serving, so only reply lines reach triohooks. If the process
    was not started as a worker (``TRIOHOOKS_WORKER`` is not ``1``), the one event of a
    one-shot hook is answered instead -- its stdin (TOML) or environment (JSON dialect) -- and
    the process exits with the reply's exit code (``SystemExit``).

    With both given (binary streams), the loop runs on them, whatever the environment.
    """
    if (stdin is None) != (stdout is None):
        raise ValueError("give both stdin and stdout, or neither")
    if stdin is not None and stdout is not None:
        _loop(handler, stdin, stdout)
        return
    worker = os.environ.get(WORKER_ENV) == "1"
    with _private_streams() as (inp, out):
        if worker:
            _loop(handler, inp, out)
            return
        code = _once(handler, inp, out)
    raise SystemExit(code)


def _loop(handler: Handler, inp: BinaryIO, out: BinaryIO) -> None:
    try:
        while line := inp.readline():
            answer = _answer(handler, line)
            try:
                out.write(answer)
                out.flush()
            except BrokenPipeError:  # triohooks is gone: so are we
                return
    except KeyboardInterrupt:  # Ctrl-C while trying a worker by hand
        raise SystemExit(130) from None


def _once(handler: Handler, inp: BinaryIO, out: BinaryIO) -> int:
    """A one-shot run: the request from the environment (JSON dialect) or stdin (TOML)."""
    if _PAYLOAD_JSON in os.environ or _PAYLOAD_PATH in os.environ:
        env = {k: v for k, v in os.environ.items() if k.startswith(_VAR_PREFIX)}
        try:
            request: Event | Request = Request.from_env(env)
        except ValueError as exc:
            return _emit(Reply(1, stderr=f"{_ME}: bad request: {exc}\n"), out)
    else:
        try:
            request = _decode(inp.read())
        except ValueError as exc:
            return _emit(Reply(1, stderr=f"{_ME}: bad event on stdin: {exc}\n"), out)
    return _emit(_call(handler, request), out)


def _emit(reply_: Reply, out: BinaryIO) -> int:
    """Print a reply as a one-shot hook would; its exit code."""
    try:
        out.write(_valid_text(reply_.stdout).encode())
        out.flush()
    except BrokenPipeError:
        pass
    if reply_.stderr:
        sys.stderr.write(_valid_text(reply_.stderr))
        sys.stderr.flush()
    return reply_.exit


@contextlib.contextmanager
def _private_streams() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The process's stdin and stdout as private binary streams, with descriptor 0 reading
    /dev/null and 1 writing to stderr meanwhile (children the handler starts inherit those);
    both restored after."""
    _flush(sys.stdout)
    saved_in, saved_out = os.dup(0), os.dup(1)  # not inheritable
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        try:
            os.dup2(2, 1)
        except OSError:  # no stderr: stray output goes nowhere
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
        inp = os.fdopen(os.dup(saved_in), "rb")
        out = os.fdopen(os.dup(saved_out), "wb")
        with inp, out:
            yield inp, out
    finally:
        _flush(sys.stdout)
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


# -- small helpers -----------------------------------------------------------------------------


def _compact(obj: Any) -> str:
    """JSON on one line (control characters escaped, so never a raw newline)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _valid_text(text: str) -> str:
    """``text`` with any lone surrogate (from undecodable bytes) replaced: JSON readers
    (triohooks' among them) refuse those."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def _flush(*streams: Any) -> None:
    for stream in streams:
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
