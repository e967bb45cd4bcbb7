"""The store behind a `corral serve`, reached over HTTP (client.py): which operations
travel and who may call them (methods.py), and how their values do (wire.py)."""

TOKEN_ENV = "CORRAL_TOKEN"  # noqa: S105 - the variable's name, not a token
# The namespace a client acts in, sent with every call: the server answers 403 when it is
# not its token's (server/auth.py), so a client never works in a namespace it did not name.
NAMESPACE_HEADER = "X-Corral-Namespace"
