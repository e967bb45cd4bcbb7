"""The board's shapes: seed 001's records as views of corral's (no I/O)."""
