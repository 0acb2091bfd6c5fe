"""`agent.guardrails`: the worker's checks of the task input, each tool result and the final
answer (`checks.py`), and the turn's record of their verdicts (`decisions.py`)."""
