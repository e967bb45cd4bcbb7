"""`corral serve`: the HTTP API over the same use cases as the CLI (imported by `serve` only).

app.py builds the Starlette application; auth.py turns a bearer token into the role a
route needs; answers.py turns corral's errors into HTTP answers; one module per group of
routes (tasks.py ...) calls one use case per route and decides nothing itself.
"""
