"""The store behind a `corral serve`, reached over HTTP (client.py): which operations
travel and who may call them (methods.py), and how their values do (wire.py)."""

TOKEN_ENV = "CORRAL_TOKEN"  # noqa: S105 - the variable's name, not a token
