"""Agent dialects: Claude Code, Gemini CLI and Codex CLI hook configs, run by triohooks.

Each dialect reads that agent's own settings files unchanged (:mod:`.config`), feeds each hook
that agent's own input JSON and environment, reads its reply by that agent's rules
(:mod:`.replies`) and answers in that agent's output format (:mod:`.merge`). :mod:`.runner`
runs the hooks of one agent event through the engine's process guard, HTTP client and judge;
:mod:`.adopt` moves an agent's hooks into triohooks and back (``triohooks claude install``).
The facts per agent are in :mod:`.spec`. Layer: beside the engine; the fronts use it.
"""
