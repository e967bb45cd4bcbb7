"""Use cases: what a user or a runner asks of corral, as plain functions over a `Store`.

Each decides what policy says and hands the store one atomic change; the CLI, the
server and the runtime call them, never the store's writes directly. Below the git
layer and above the store (docs/architecture.md, The layers).
"""
