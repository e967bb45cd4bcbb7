"""The worker runner: one process that claims tasks, runs each, and reports them."""
