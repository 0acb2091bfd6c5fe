"""The runtime that wires a worker: the composition root that puts `turnkeeper.workflows` and
`turnkeeper.activities` together from the worker's settings.

It sits above both (they know only `turnkeeper.contracts` and never each other) and below the
worker process and the console; pyproject.toml's `[tool.importlinter]` holds the lines.
"""
