"""What approvers do in a running turn: the calls waiting for a decision (or a caller's
result), whether a decision may apply now, signed decisions of keyed approvers, standing approvals
and the agent's `ApprovalCacheWorkflow` that keeps them, steering, interrupts and `cancel`.
"""
