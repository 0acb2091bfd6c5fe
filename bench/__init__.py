"""Performance bench of turnkeeper against a bare-Temporal floor of the same turn shape.

Run it with `python -m bench.run` (see bench/README.md).
"""
