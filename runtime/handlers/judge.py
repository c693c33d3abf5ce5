"""Prompt hooks' judge (``type = "prompt"``, blitz HK-63): the pluggable model interface and the
built-in OpenAI-compatible client.

This module owns what a judge is (``(prompt, event_json, model) -> JudgeReply``), the built-in
judge that asks any chat-completions server, and building it from the environment/config at
startup. It must not interpret the model's answer as a decision: the dispatcher reads
``JudgeReply.text`` like a command hook's stdout (``{"decision": ""}`` = no opinion), applies the
hook's timeout and ``fail_closed``.

Configuration (the TOML ``[judge]`` table wins over the environment)::

    base_url     TRIOHOOKS_JUDGE_BASE_URL      http://127.0.0.1:8080/v1 (+ "/chat/completions")
    model        TRIOHOOKS_JUDGE_MODEL         default model; a hook's own ``model`` wins
    api_key_env  TRIOHOOKS_JUDGE_API_KEY_VAR   the *name* of the variable holding the API key

No key variable means no ``Authorization`` header (local servers). The key is never read from a
config file and never appears in an error.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Final, Self

import msgspec

if TYPE_CHECKING:
    # The HTTP client (and trio under it) loads when a judge first asks: building the judge,
    # or only its warning (``triohooks fire`` that runs no hook), costs nothing.
    from .http import HttpHookClient

__all__ = [
    "ENV_API_KEY_VAR",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "SYSTEM_PROMPT",
    "Judge",
    "JudgeError",
    "JudgeReply",
    "OpenAIJudge",
    "judge_from_env",
]

ENV_BASE_URL: Final = "TRIOHOOKS_JUDGE_BASE_URL"
ENV_MODEL: Final = "TRIOHOOKS_JUDGE_MODEL"
ENV_API_KEY_VAR: Final = "TRIOHOOKS_JUDGE_API_KEY_VAR"

#: A chat-completions answer larger than this is not a hook reply.
MAX_RESPONSE_BYTES: Final = 1024 * 1024

SYSTEM_PROMPT: Final = """\
You are a lifecycle hook of an AI coding agent. You receive criteria written by the user and one \
event of the agent (JSON: the event name, and for tool events the tool and its arguments). Judge \
the event against the criteria only.

Answer with ONLY a JSON object, no prose and no code fence:
- {"decision": "block", "reason": "<one sentence why>"} when the event violates the criteria;
- {"decision": "allow", "reason": "<one sentence why>"} when the criteria explicitly permit it;
- {"decision": ""} when the criteria do not apply to this event.
"""


class JudgeReply(msgspec.Struct, frozen=True, kw_only=True):
    """A judge's answer: the model's text (expected: a JSON hook reply) and its token counts."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


#: ``(prompt, event_json, model) -> reply``. The embedding agent may pass its own (the session's
#: model); ``model`` is the hook's ``model`` field or None. Raise an ``Exception`` to fail.
Judge = Callable[[str, str, str | None], Awaitable[JudgeReply]]


class JudgeError(Exception):
    """The judge could not give an answer (server, network or a malformed response)."""


class _Part(msgspec.Struct):
    type: str = ""
    text: str | None = None


class _Message(msgspec.Struct):
    content: str | list[_Part] | None = None


class _Choice(msgspec.Struct):
    message: _Message


class _Usage(msgspec.Struct):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class _Completion(msgspec.Struct):
    choices: list[_Choice]
    usage: _Usage | None = None


_decode_completion: Final = msgspec.json.Decoder(_Completion).decode
_encode: Final = msgspec.json.Encoder().encode
_FENCE: Final = re.compile(r"\A```[\w-]*[ \t]*\n(.*?)\n?```\Z", re.DOTALL)
_URL: Final = re.compile(r"https?://[^/\s?#]+", re.IGNORECASE)
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _answer_text(message: _Message) -> str:
    content = message.content
    if isinstance(content, list):
        content = "".join(p.text for p in content if p.text is not None) or None
    if content is None:
        raise JudgeError("the model gave no text answer")
    text = content.strip()
    fenced = _FENCE.match(text)
    return fenced.group(1).strip() if fenced else text


class OpenAIJudge:
    """The built-in judge: one chat-completions request per prompt-hook run.

    Works with any OpenAI-compatible server. Entered as an async context manager (or given the
    engine's ``client``) it reuses one connection pool; called without either, each call opens
    and closes its own connection, so nothing is left open.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        client: HttpHookClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout_s = timeout_s
        self._api_key = api_key
        self._client = client
        self._owned: HttpHookClient | None = None

    def __repr__(self) -> str:  # never the key
        return f"OpenAIJudge(url={self.url!r}, model={self.model!r})"

    async def __aenter__(self) -> Self:
        if self._client is None:
            from .http import HttpHookClient

            self._owned = self._client = HttpHookClient()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pool this judge opened itself (not a client it was given). A checkpoint,
        shielded (see :meth:`HttpHookClient.aclose`)."""
        owned, self._owned = self._owned, None
        if owned is not None:
            self._client = None
            await owned.aclose()

    def request_body(self, prompt: str, event_json: str, model: str | None) -> bytes:
        """The chat-completions request for one judgement."""
        user = f"Criteria:\n{prompt}\n\nEvent:\n{event_json}"
        return _encode(
            {
                "model": model,
                "messages": [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user},
                ],
            }
        )

    async def __call__(self, prompt: str, event_json: str, model: str | None) -> JudgeReply:
        """Ask the model; raise :class:`JudgeError` if no usable answer comes back.

        A checkpoint. Bounded by ``timeout_s``; the caller's cancel scope (the hook's timeout)
        usually ends it first. On cancel, ``Cancelled`` propagates and the request is dropped.
        """
        model = model or self.model
        if not model:
            raise JudgeError(f"no model to ask: set {ENV_MODEL}, [judge] model or the hook's model")
        if self._client is not None:
            return await self._ask(self._client, prompt, event_json, model)
        from .http import HttpHookClient

        async with HttpHookClient() as client:
            return await self._ask(client, prompt, event_json, model)

    async def _ask(
        self, client: HttpHookClient, prompt: str, event_json: str, model: str
    ) -> JudgeReply:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        reply = await client.post(
            self.url,
            body=self.request_body(prompt, event_json, model),
            headers=headers,
            timeout_s=self.timeout_s,
            cap=MAX_RESPONSE_BYTES,
        )
        if reply.status != "ok":
            raise JudgeError(f"{self.url}: {reply.error}")
        if reply.truncated:
            raise JudgeError(f"{self.url}: response larger than {MAX_RESPONSE_BYTES} bytes")
        try:
            completion = _decode_completion(reply.body)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise JudgeError(f"{self.url}: malformed chat-completions response: {exc}") from None
        if not completion.choices:
            raise JudgeError(f"{self.url}: the response has no choices")
        usage = completion.usage or _Usage()
        return JudgeReply(
            text=_answer_text(completion.choices[0].message),
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
        )


def judge_from_env(
    environ: Mapping[str, str], config: Mapping[str, str] | None = None
) -> tuple[OpenAIJudge | None, str | None]:
    """Build the built-in judge at startup: ``(judge, warning)``.

    ``config`` is the TOML ``[judge]`` table (``base_url``, ``model``, ``api_key_env``); when it
    is None those lowercase keys are read from ``environ`` as well, so one merged mapping works.
    Nothing configured gives ``(None, None)``. A judge that cannot be built gives ``(None,
    warning)``: prompt hooks then fall back (the embedding agent's judge, else they fail).
    """
    cfg = config if config is not None else environ

    def setting(key: str, env: str) -> str:
        return (cfg.get(key) or environ.get(env) or "").strip()

    base_url = setting("base_url", ENV_BASE_URL)
    model = setting("model", ENV_MODEL)
    key_var = setting("api_key_env", ENV_API_KEY_VAR)
    if not (base_url or model or key_var):
        return None, None
    problem = None
    if not base_url:
        problem = f"no base URL ({ENV_BASE_URL} or [judge] base_url)"
    elif not _URL.match(base_url):
        problem = f"base URL {base_url!r} is not an http(s):// URL"
    elif key_var and not _ENV_NAME.match(key_var):
        problem = f"API key variable name {key_var!r} is not a variable name"
    elif key_var and not environ.get(key_var):
        problem = f"API key variable {key_var} is not set"
    if problem is not None:
        return None, f"prompt-hook judge not built: {problem}; prompt hooks use the fallback judge"
    api_key = environ.get(key_var) if key_var else None
    return OpenAIJudge(base_url=base_url, model=model or None, api_key=api_key), None
