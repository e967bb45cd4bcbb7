"""The PostgreSQL store: its driver, its sessions of their own, and its error messages."""
