"""Every Python example in the embedding docs runs, so the docs can't drift from the code.

Each ```python block of docs/getting-started.md and docs/embedding.md is a complete program:
it runs in a fresh interpreter from an empty temp directory (as a reader would run it after
installing triohooks anywhere), with the global config, state and temp dirs pointed at temp dirs
so the user's own hooks and audit log play no part. getting-started.md's run after
``triohooks init`` (its starting policy is the user's config, as the page says); the others
bring their own config. Its asserts are the check. The example agents in examples/ run too.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
import trio

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("getting-started.md", "embedding.md")
#: At least this many runnable examples per doc: a broken extractor must not pass silently.
MIN_BLOCKS = {"getting-started.md": 2, "embedding.md": 9}

_FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(doc: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block in ``docs/<doc>``."""
    text = (ROOT / "docs" / doc).read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in _FENCE.finditer(text)]


EXAMPLES = [
    pytest.param(doc, code, id=f"{doc}:{line}") for doc in DOCS for line, code in python_blocks(doc)
]


def isolated_env(tmp_path: Path, user_config: str | None = None) -> dict[str, str]:
    """The environment of a program run as a reader runs it: its own global config dir
    (holding ``user_config`` as ``hooks.toml`` when given), state dir and temp dir, and the
    installed triohooks (nothing from the checkout on the path)."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    for name in ("TRIOHOOKS_CONFIG_DIR", "TRIOHOOKS_STATE_DIR", "TMPDIR"):
        path = tmp_path / name.lower()
        path.mkdir()
        env[name] = str(path)
    if user_config is not None:
        Path(env["TRIOHOOKS_CONFIG_DIR"], "hooks.toml").write_text(user_config)
    return env


def elsewhere(tmp_path: Path) -> Path:
    """An empty directory to run a doc example in: not the checkout."""
    path = tmp_path / "elsewhere"
    path.mkdir()
    return path


def doc_example(module: str) -> tuple[str, list[str]]:
    """The docs/integrations.md example of ``triohooks.integrations.<module>`` and the lines
    (code, no blanks or comments) that guard its agent."""
    (code,) = [
        code
        for _, code in python_blocks("integrations.md")
        if f"from triohooks.integrations.{module} import" in code
    ]
    tail = code.split(GUARDED_FROM, 1)[1].splitlines()[1:]
    return code, [line for line in tail if line.strip() and not line.strip().startswith("#")]


#: The line of a doc example after which come the lines a user adds to guard their agent.
GUARDED_FROM = "# Guarded by triohooks"


async def run_python(tmp_path: Path, argv: list[str], user_config: str | None = None) -> str:
    with trio.fail_after(30):
        done = await trio.run_process(
            [sys.executable, *argv],
            cwd=elsewhere(tmp_path),
            env=isolated_env(tmp_path, user_config),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def test_every_doc_has_its_examples() -> None:
    for doc in DOCS:
        assert len(python_blocks(doc)) >= MIN_BLOCKS[doc], doc


@pytest.mark.parametrize(("doc", "code"), EXAMPLES)
async def test_doc_example_runs(tmp_path: Path, doc: str, code: str) -> None:
    from triohooks.fronts.init_cli import STARTER

    await run_python(tmp_path, ["-c", code], STARTER if doc == "getting-started.md" else None)


@pytest.mark.parametrize("example", ["trio_agent.py", "asyncio_agent.py"])
async def test_example_agent_runs(tmp_path: Path, example: str) -> None:
    out = await run_python(tmp_path, [str(ROOT / "examples" / example)])
    assert "ran bash: pytest tests/test_parser.py -q -x" in out  # rewritten by a TOML hook
    assert "blocked: blocked by pre_tool hook: rm -rf needs a human" in out  # in-process hook
    assert "blocked: blocked by pre_tool hook: pushing is for humans" in out  # example config
    assert "closed: 1 background event(s) ran, 0 dropped" in out
