"""The chaos matrix: real turns on a real dev server and real worker processes, under faults.

    python -m bench.chaos [--quick]

See `bench/chaos/matrix.py` for the rows and `bench/chaos/properties.py` for what is checked
for every turn.
"""
