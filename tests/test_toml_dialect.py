from __future__ import annotations

import pytest

from triohooks.config.model import ArgsHandler, CommandHandler, HttpHandler, PromptHandler
from triohooks.config.toml_dialect import parse_toml_text


def parse(text: str):
    return parse_toml_text(text, file="hooks.toml", scope="global")


def only_error(text: str) -> str:
    out = parse(text)
    assert not out.hooks, out.hooks
    assert out.problems, "expected a problem"
    return str(out.problems[0])


def test_full_hook_reads_every_field() -> None:
    out = parse(
        """
[[hooks.pre_tool]]
match = "bash"
if = "shell(git push)"
command = "./check.sh"
timeout_seconds = 10
fail_closed = true

[[hooks.pre_tool]]
args = ["python3", "x.py"]

[[hooks.post_tool]]
type = "http"
url = "https://example.test/hook"
headers = { Authorization = "Bearer $TOKEN" }
allowed_env_vars = ["TOKEN"]

[[hooks.prompt_submit]]
type = "prompt"
prompt = "Block prompts asking for secrets"
model = "small"
"""
    )
    assert out.problems == []
    first, second, http, prompt = out.hooks
    assert first.handler == CommandHandler("./check.sh")
    assert (first.match, first.if_rule, first.timeout_s, first.fail_closed) == (
        "bash",
        "shell(git push)",
        10.0,
        True,
    )
    assert first.compiled_if is not None
    assert second.handler == ArgsHandler(("python3", "x.py"))
    assert second.timeout_s == 30.0  # blitz default
    assert http.handler == HttpHandler(
        "https://example.test/hook", (("Authorization", "Bearer $TOKEN"),), ("TOKEN",)
    )
    assert prompt.handler == PromptHandler("Block prompts asking for secrets", "small")
    assert [h.index for h in out.hooks] == [0, 1, 0, 0]
    assert {h.dialect for h in out.hooks} == {"toml"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[[hooks.pre_tool]]\ncommand = ""', "hooks.toml: pre_tool[0].command: must not be empty"),
        ('[[hooks.pre_tool]]\ncommand = "   "', "pre_tool[0].command: must not be empty"),
        ('[[hooks.pre_tool]]\nmatch = "[a"\ncommand = "x"', "pre_tool[0].match:"),
        ('[[hooks.pre_tool]]\nmatch = "a\\\\"\ncommand = "x"', "pre_tool[0].match:"),
        ('[[hooks.pre_tool]]\nif = "shell(git"\ncommand = "x"', "pre_tool[0].if:"),
        (
            '[[hooks.pre_tool]]\ncommand = "x"\nargs = ["y"]',
            "pre_tool[0].args: a hook has command or args",
        ),
        ('[[hooks.pre_tool]]\ntype = "http"', "pre_tool[0].url: an http hook needs url"),
        ('[[hooks.pre_tool]]\ntype = "http"\nurl = "ftp://x"', "pre_tool[0].url: must be an http"),
        ('[[hooks.pre_tool]]\ntype = "http"\nurl = "https://"', "pre_tool[0].url:"),
        ('[[hooks.pre_tool]]\ntype = "prompt"', "pre_tool[0].prompt: a prompt hook needs prompt"),
        ('[[hooks.pre_tool]]\ncommand = "x"\ncomand = "y"', "pre_tool[0].comand: unknown field"),
        ('[[hooks.pre_tools]]\ncommand = "x"', "hooks.toml: pre_tools: unknown event"),
        ('[[hooks.pre_tool_use]]\ncommand = "x"', "unknown event (did you mean 'pre_tool'?)"),
        ('[[hooks.pre_tool]]\ncommand = "x"\ntimeout_seconds = 0', "pre_tool[0].timeout_seconds"),
        ('[[hooks.pre_tool]]\ncommand = "x"\ntimeout_seconds = "5"', "pre_tool[0].timeout_seconds"),
        ('[[hooks.pre_tool]]\ncommand = "x"\nfail_closed = "yes"', "pre_tool[0].fail_closed"),
        ('[[hooks.pre_tool]]\ntype = "grpc"\ncommand = "x"', "pre_tool[0].type"),
        ('[[hooks.pre_tool]]\ncommand = "x"\nurl = "http://a"', "pre_tool[0].url: does not belong"),
        ("[[hooks.pre_tool]]\n", "pre_tool[0].command: a command hook needs command"),
        (
            '[[hooks.prompt_submit]]\nif = "shell(x)"\ncommand = "x"',
            "prompt_submit[0].if: applies only",
        ),
        ("[[hooks.pre_tool]]\nargs = []", "pre_tool[0].args"),
        ("[hooks]\npre_tool = 3", "pre_tool: must be an array of tables"),
        ("hooks = 1", "hooks.toml: hooks: must be a table"),
        ("[hooks.pre_tool\n", "not valid TOML"),
        ("[other]\nx = 1", "hooks.toml: other: unknown top-level key"),
    ],
)
def test_strict_errors_name_file_event_index_field(text: str, expected: str) -> None:
    assert expected in only_error(text)


def test_index_counts_within_the_event() -> None:
    out = parse('[[hooks.pre_tool]]\ncommand = "ok"\n[[hooks.pre_tool]]\ncommand = ""\n')
    assert [str(p) for p in out.problems] == ["hooks.toml: pre_tool[1].command: must not be empty"]


def test_every_problem_is_listed_not_only_the_first() -> None:
    out = parse('[[hooks.pre_tool]]\ncommand = ""\nmatch = "["\nbogus = 1\n')
    fields = sorted(p.field or "" for p in out.problems)
    assert fields == ["bogus", "command", "match"]


def test_match_is_ignored_for_prompt_submit_but_still_validated() -> None:
    out = parse('[[hooks.prompt_submit]]\nmatch = "bash"\ncommand = "x"\n')
    assert out.problems == [] and out.hooks[0].match == "bash"
