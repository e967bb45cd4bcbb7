"""Who makes a change, as the events record it (`actor`): the names corral gives itself.

A worker acts under its id, a command holding a claim's token as `token:N`; the rest are
these. Apart from model/events.py so that a command that records an operator's change
does not build the event records (bench/cli_latency.py).
"""

OPERATOR = "operator"  # a person, through a command without a claim's token
RECONCILER = "reconciler"  # the reconcile pass (store/recovery.py names it too)
