"""The final answer's checks: `agent.output_schema` (JSON that fits a schema, in the prompt and
after) and `agent.output_validators` (the worker's checks, run as an activity).
"""
