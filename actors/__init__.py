"""The concurrent machinery of triohooks: one module per actor, plus the supervisor.

Actors talk over bounded trio memory channels only; every timeout is a cancel scope at the
boundary that owns it.
"""
