"""Sub-agents: a model's call of one as a child turn, the budgets and autonomy it inherits,
their approvals relayed to the root, and how each is offered to the model as a tool.
"""
