"""The model-call activity and the steps of a call that have a reason of their own to change.

- `model_call_activity`: the activity: conversation, tools, cost, one attempt, the answer stored.
- `provider_call`: which provider serves the model, and one heartbeating attempt at it.
- `cost_check`: the cost budget checked before a call, and the answer's price after it.
- `offered_tools`: the tool definitions the model is offered, and what the workflow learns of them.
"""
