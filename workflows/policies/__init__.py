"""`agent.policy`: each tool call checked against the worker's Cedar policies before it runs."""
