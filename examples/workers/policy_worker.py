"""A warm worker: block `rm -rf` in bash calls, no opinion on anything else.

Either dialect (docs/hook-protocol.md, "Warm workers"):

    [[hooks.pre_tool]]                          # hooks.toml
    match = "bash"
    args = ["python3", ".agents/policy_worker.py"]   # a Python that can import triohooks
    worker = true

    "executor": {"type": "bash", "command": "python3 .agents/policy_worker.py", "worker": true}

Started once; then one request per line on stdin, one reply per line on stdout, until EOF.
Without `worker = true` the same file runs as a one-shot hook.
"""

from triohooks.worker import Event, Request, Result, block, serve


def handle(request: Event | Request) -> Result:
    if isinstance(request, Request):  # JSON dialect: the EVERRUNS_HOOK_* variables
        tool, args = request.tool_name, request.arguments
    else:  # TOML dialect: the event object
        tool, args = request.get("tool"), request.get("args") or {}
    if tool == "bash" and "rm -rf" in str(args.get("command", "")):
        return block("no rm -rf, please")
    return None  # no opinion: the call goes on


if __name__ == "__main__":
    serve(handle)
