"""The engines an agent embeds: :class:`HookEngine` on trio and :class:`AsyncioHookEngine` on
asyncio. They wire the actors together and close them in order.
"""
