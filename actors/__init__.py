"""``triohooks.actors``: the concurrent machinery, one module per actor, plus the supervisor.

The loader, dispatcher, post worker, reaper and audit sink each own their state and live in a
module of their name; ``supervisor`` starts and restarts them. docs/architecture.md says, hop by
hop, which of their exchanges are channel messages and which are calls.
"""
