"""A turn's budgets: its limits and what is left of them, the checks before each model call,
a human's extension of a spent budget, and the wait of a turn whose tenant is at a spend cap.
"""
