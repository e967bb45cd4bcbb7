"""The board's HTTP routes, mounted by `corral serve` in one place (server/app.py: ROUTES).

The GETs of `/api/tasks` stay corral's own (server/tasks.py), which answer the board's
shape only when asked with `view=seed001` (board_tasks.view_of); the board adds `PATCH`
on a task and the session and heartbeat routes.
"""

from corral.board.routes import board_tasks, heartbeats, sessions

ROUTES = [*board_tasks.ROUTES, *sessions.ROUTES, *heartbeats.ROUTES]
