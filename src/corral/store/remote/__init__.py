"""The store behind a `corral serve`, reached over HTTP (client.py): which operations
travel and who may call them (methods.py), and how their values do (wire.py)."""
