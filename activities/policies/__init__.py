"""The worker's Cedar policies for tool calls (`TURNKEEPER_POLICY_FILE`, docs/policies.md).

policy_set.py        A set of policy files, parsed once, and our effects from Cedar's decision.
policy_activity.py   The set kept in step with its files, and the `check_policy` activity.
cedar_values.py      A tool call's context as Cedar values.
source_lines.py      Where a parse error is, and where each policy starts.
entity_schema.py     The schema of our entities, and a file checked against it.
"""
