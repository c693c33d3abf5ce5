"""Combining: the Outcome of one event and how hook results fold into it (docs/design.md §5, §7).
Pure logic; imports handlers (a run's result) and config.
"""
