"""Config: the hook model, the event model, where files live, the two dialects, table building and
trust. Pure data and parsing; imports only :mod:`triohooks.match`.
"""
