"""The board's use cases: seed 001's moves, sessions and heartbeats."""
