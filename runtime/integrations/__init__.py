"""Adapters that put an agent framework's own agents under triohooks (``docs/integrations.md``).

One module per framework, each importing its framework (installed with the extra of the same
name: ``pip install 'triohooks[pydantic-ai]'``, ``'triohooks[openai-agents]'``):

- :mod:`triohooks.integrations.pydantic_ai`: pydantic-ai ``Agent``\\ s, through a capability
  that wraps the run's toolset.
- :mod:`triohooks.integrations.openai_agents`: the OpenAI Agents SDK's ``Agent``\\ s, through
  guarded copies of their function tools.

Each offers the same two things, built on :meth:`~triohooks.engine.guarded.Guards.guarded_call`
and :class:`~triohooks.engine.guarded.Session`: ``guard_tools(...)`` (every tool call goes
through pre_tool / post_tool) and ``hooked(agent, engine)`` (that, inside a triohooks session:
session_start, prompt_submit, the stop loop, session_end). This package itself imports neither
framework.
"""
