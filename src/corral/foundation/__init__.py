"""Foundation: errors, clock, ids, settings and the other modules every layer imports.

Nothing here imports another layer of corral (pyproject.toml's import contract).
"""
