"""The concurrent machinery of triohooks: one module per actor, plus the supervisor.

Actors talk over bounded trio memory channels only; every timeout is a cancel scope at the
boundary that owns it.
"""

# The engine (in ``runtime``) wires these actors, and the actors use ``runtime``'s pure logic;
# importing the public package first makes ``import actors.x`` work as a first import too.
import runtime as _runtime  # noqa: F401
