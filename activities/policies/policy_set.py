"""A set of Cedar policy files, parsed once, and what it decides for one tool call.

Cedar (`cedarpy`) decides Allow or Deny and names the policies that determined it; this module
turns that into our three effects: `forbid` (a forbid matched, or no permit did: Cedar denies by
default), `ask` (an allowed call that any matching permit annotates `@effect("ask")`: the
stricter rule wins, as a forbid wins over a permit, so a broad baseline permit never silences an
"ask") and `permit`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cedarpy
from turnkeeper.activities.policies.cedar_values import cedar_context
from turnkeeper.activities.policies.source_lines import error_line, policy_lines
from turnkeeper.contracts.policies import PolicyEffect
from turnkeeper.contracts.policy_io import PolicyCheckInput, PolicyCheckResult

ASK: str = "ask"


class PolicyFileError(ValueError):
    """A policy file that cannot be read or parsed, or breaks our annotations' rules; the
    message names the file and the line."""


@dataclass(frozen=True)
class PolicySource:
    """One policy file as it was read."""

    path: Path
    text: str


@dataclass(frozen=True)
class CedarPolicies:
    """The worker's policy set: the files' policies in one Cedar `PolicySet`, each policy's
    name (its `@id`, else Cedar's `policyN`) and which ones are `@effect("ask")`."""

    sources: tuple[PolicySource, ...]
    digest: str
    _set: Any = field(repr=False)
    _names: dict[str, str] = field(repr=False)
    _asking: frozenset[str] = field(repr=False)

    @classmethod
    def read(cls, paths: list[Path]) -> CedarPolicies:
        """Reads and parses `paths`.

        Raises:
            PolicyFileError: A file cannot be read or does not parse (naming file and line), or
                an `@effect` annotation is not `"ask"` on a permit.
        """
        sources = []
        for path in paths:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                why = getattr(err, "strerror", None) or err
                raise PolicyFileError(f"{path}: cannot be read: {why}") from None
            sources.append(PolicySource(path, text))
        return cls.parse(sources)

    @classmethod
    def parse(cls, sources: list[PolicySource]) -> CedarPolicies:
        """The set of `sources`, each parsed and checked on its own first so that an error
        names its file and line."""
        for source in sources:
            check_source(source)
        whole = "\n".join(source.text for source in sources)
        policy_set = cedarpy.PolicySet.from_str(whole)
        static = json.loads(cedarpy.policies_to_json_str(whole))["staticPolicies"]
        names = {pid: body.get("annotations", {}).get("id") or pid for pid, body in static.items()}
        asking = frozenset(
            pid for pid, body in static.items() if body.get("annotations", {}).get("effect") == ASK
        )
        digest = hashlib.sha256("\0".join(s.text for s in sources).encode()).hexdigest()
        return cls(tuple(sources), digest, policy_set, names, asking)

    def decide(self, call: PolicyCheckInput) -> tuple[PolicyCheckResult, list[str]]:
        """What the set decides for `call`, and the evaluation errors of policies Cedar skipped
        (a condition that read an attribute the call lacks, say)."""
        result = cedarpy.is_authorized(_request(call), self._set, _entities(call))
        reasons = sorted(result.diagnostics.reasons, key=_policy_number)
        effect: PolicyEffect
        if not result.allowed:
            effect, deciding = "forbid", reasons
        elif asking := [pid for pid in reasons if pid in self._asking]:
            effect, deciding = "ask", asking
        else:
            effect, deciding = "permit", reasons
        decided = PolicyCheckResult(
            effect=effect, policies=[self._names[p] for p in deciding], policy_hash=self.digest
        )
        return decided, list(result.diagnostics.errors)


def check_source(source: PolicySource) -> None:
    """Parses one file on its own, so an error names its file and line.

    Raises:
        PolicyFileError: It does not parse, or an `@effect` is not `"ask"` on a permit.
    """
    try:
        cedarpy.PolicySet.from_str(source.text)
    except ValueError as err:
        line = error_line(source.text, str(err))
        raise PolicyFileError(f"{source.path}:{line}: {err}") from None
    static = json.loads(cedarpy.policies_to_json_str(source.text))["staticPolicies"]
    lines = policy_lines(source.text)
    for pid, body in static.items():
        effect = body.get("annotations", {}).get("effect")
        if effect is None:
            continue
        if effect != ASK or body.get("effect") != "permit":
            line = lines[_policy_number(pid)] if _policy_number(pid) < len(lines) else 1
            raise PolicyFileError(
                f'{source.path}:{line}: @effect("{effect}"): the one effect annotation is '
                '@effect("ask"), on a permit'
            )


def _policy_number(pid: str) -> int:
    return int(pid.removeprefix("policy")) if pid.removeprefix("policy").isdigit() else 0


def _request(call: PolicyCheckInput) -> dict[str, Any]:
    return {
        "principal": {"type": "Agent", "id": call.caller.agent_id},
        "action": {"type": "Action", "id": "call"},
        "resource": {"type": "Tool", "id": call.tool},
        "context": cedar_context(call),
    }


def _entities(call: PolicyCheckInput) -> list[dict[str, Any]]:
    caller = call.caller
    agent = {
        "uid": {"type": "Agent", "id": caller.agent_id},
        "attrs": {
            "tenant": caller.tenant,
            "started_by": caller.started_by,
            "approvers": list(caller.approvers),
        },
        "parents": [],
    }
    return [agent, {"uid": {"type": "Tool", "id": call.tool}, "attrs": {}, "parents": []}]
