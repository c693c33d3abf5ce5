"""Handlers: how one hook of each kind is run and how its end is read (the runners), the process
contract the reaper fulfils, the http client and the prompt-hook judge. Imports config and match.
"""
