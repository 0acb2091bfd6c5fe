"""The Cedar schema of what our requests hold, and a policy file checked against it
(`turnkeeper policy check`).

`context.input` is each tool's own JSON, whose shape no schema here can know, and Cedar's
schemas have no open records: it is declared as an empty record, and the validator's complaints
about attributes read inside it are dropped. A policy should test them with `has` first (a
condition that reads a missing attribute is an error, and Cedar then skips the policy).
"""

from __future__ import annotations

import re
from typing import Final

import cedarpy
from turnkeeper.activities.policies.policy_set import PolicyFileError, PolicySource, check_source
from turnkeeper.activities.policies.source_lines import policy_lines

ENTITY_SCHEMA: Final = """
entity Agent { tenant: String, started_by: String, approvers: Set<String> };
entity Tool;
action call appliesTo {
  principal: Agent,
  resource: Tool,
  context: {
    input: {},
    cost_usd: decimal,
    iteration: Long,
    depth: Long,
    time: datetime,
    hour: Long,
    weekday: Long,
  },
};
"""

_INSIDE_INPUT = re.compile(r"attribute `input\.[^`]*` in context")
_POLICY_ID = re.compile(r"^\[(policy\d+)\] (?:for policy `policy\d+`, )?")


def problems(source: PolicySource) -> list[str]:
    """What is wrong with one policy file, each as `FILE:LINE: message`; empty when it parses,
    follows our annotations' rules and fits the schema of our entities."""
    try:
        check_source(source)
    except PolicyFileError as err:
        return [str(err)]
    result = cedarpy.validate_policies(source.text, ENTITY_SCHEMA)
    lines = policy_lines(source.text)
    found = []
    for error in result.errors:
        message = str(error)
        if _INSIDE_INPUT.search(message):
            continue
        line = 1
        named = _POLICY_ID.match(message)
        if named:
            number = int(named.group(1).removeprefix("policy"))
            line = lines[number] if number < len(lines) else 1
            message = message[named.end() :]
        found.append(f"{source.path}:{line}: {message}")
    return found
