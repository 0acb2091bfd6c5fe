"""Activities that reach the runtime's own workflows through the worker's client, as workflow code
cannot (a workflow cannot signal-with-start or cancel another): an agent's standing approvals and
the cancellation of a turn an approver cancelled, with what they need to reach those workflows;
and the worker's bound on one `wait` (`wait_limit.py`), which workflow code cannot read.
"""
