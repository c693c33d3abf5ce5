"""Fronts: everything a person or another program talks to (the command line, the websocket
server and client, the watch view, the demo, doctor, self-configuration). The top layer.
"""
