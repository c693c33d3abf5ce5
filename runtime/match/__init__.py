"""Matching: Go ``path.Match`` globs, the JSON dialect's matchers, ``if`` permission rules and the
bash parser they use. Pure functions over plain data; imports nothing else of triohooks.
"""
