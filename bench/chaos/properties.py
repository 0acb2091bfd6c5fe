"""What must hold for every turn of every row, as code: the matrix fails when one does not.

1. The turn closed (completed, or failed with a contract error type) within the row's bound.
2. Its report counts each model call it used once, with exactly the usage the fake provider
   billed for that call, however often the call was retried after a crash.
3. The calls billed beyond those in the report are at most one per fault the turn lived
   through (the call in flight when it struck).
4. The non-idempotent tool's effect happened at most once.
5. No approval or external result the caller sent was lost, outage or not.
6. A tool whose server failed (MCP rows) reached the model as an error result.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from turnkeeper.contracts.messages import ToolResultBlock

from bench.chaos.workload import APPROVAL_STEP, TurnRun, call_id
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.support.turn_outcomes import CONTRACT_ERROR_TYPES


@dataclass
class TurnVerdict:
    key: str
    outcome: str
    counted: int  # model calls in the report
    billed: int  # model calls the fake provider answered and billed
    usage_matches: bool
    duplicates: int
    sends_in_outage: int
    sends_lost: int
    first_tool_failed: bool  # the model was given an error result for the turn's first call

    @property
    def stuck(self) -> bool:
        return self.outcome == "stuck"

    @property
    def failed_typed(self) -> bool:
        return self.outcome in CONTRACT_ERROR_TYPES


def judge(run: TurnRun, fake: FakeAnthropic, ledger: list[str]) -> TurnVerdict:
    billed = fake.billed_for(run.key)
    counted = run.report.llm_calls if run.report else 0
    usage_matches = True
    if run.report is not None:
        first_bill = {}
        for call in billed:
            first_bill.setdefault(call.step, call)
        steps = [first_bill.get(step) for step in range(counted)]
        usage_matches = None not in steps and (
            sum(c.input_tokens for c in steps if c) == run.report.usage.input_tokens
            and sum(c.output_tokens for c in steps if c) == run.report.usage.output_tokens
        )
    effects = Counter(ledger)[call_id(run.key, APPROVAL_STEP)]
    first_call = call_id(run.key, 0)
    first_tool_failed = run.report is not None and any(
        isinstance(block, ToolResultBlock) and block.tool_use_id == first_call and block.is_error
        for message in run.report.messages
        for block in message.content
    )
    return TurnVerdict(
        key=run.key,
        outcome=run.outcome,
        counted=counted,
        billed=len(billed),
        usage_matches=usage_matches,
        duplicates=max(0, effects - 1),
        sends_in_outage=run.sends_in_outage,
        sends_lost=run.sends_lost,
        first_tool_failed=first_tool_failed,
    )


@dataclass
class RowResult:
    fault: str
    bound_s: float
    faults_injected: int
    verdicts: list[TurnVerdict]
    hits: Counter[str] = field(default_factory=Counter)
    wall_s: float = 0.0
    # The row exists to send decisions while the server is down: it must have sent some.
    needs_outage_sends: bool = False
    # The row's fault is a failing tool: the model must have been told of it.
    needs_first_tool_error: bool = False
    # What failed of the row's own properties beyond the turns' (a lead's report adding up, a
    # session holding every turn), one line each, judged by the row's module.
    own_violations: list[str] = field(default_factory=list)

    @property
    def completed(self) -> int:
        return sum(v.outcome == "completed" for v in self.verdicts)

    @property
    def failed_typed(self) -> int:
        return sum(v.failed_typed for v in self.verdicts)

    @property
    def stuck(self) -> int:
        return sum(v.stuck for v in self.verdicts)

    def violations(self) -> list[str]:
        """Every property that failed, one line per turn and property; empty when all hold."""
        problems = []
        for v in self.verdicts:
            where = f"{self.fault} · turn {v.key}"
            if v.stuck:
                problems.append(f"{where}: not closed within {self.bound_s:g} s")
            elif v.outcome != "completed" and not v.failed_typed:
                problems.append(f"{where}: failed with {v.outcome}, not a contract error type")
            if not v.usage_matches:
                problems.append(f"{where}: report usage differs from the calls billed")
            billing_off = v.billed - v.counted > self.faults_injected or v.billed < v.counted
            if billing_off and not v.stuck:
                problems.append(
                    f"{where}: {v.billed} calls billed, {v.counted} in the report, "
                    f"{self.faults_injected} faults"
                )
            if v.duplicates:
                problems.append(f"{where}: the non-idempotent effect ran {v.duplicates + 1}×")
            if self.needs_first_tool_error and not v.stuck and not v.first_tool_failed:
                problems.append(f"{where}: the failed tool call did not reach the model as one")
            if v.sends_lost:
                problems.append(f"{where}: {v.sends_lost} decision(s) or result(s) lost")
        if self.needs_outage_sends and not sum(v.sends_in_outage for v in self.verdicts):
            problems.append(f"{self.fault}: no decision was sent during the outage")
        return problems + self.own_violations
