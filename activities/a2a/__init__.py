"""Remote A2A agents as tools of a turn (the worker's side)."""
