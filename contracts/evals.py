"""Evaluations as durable runs: the input, progress and report of `EvalRunWorkflow`, and what
its scoring activity reads and returns. No I/O: the console, the workflow, the activity and the
HTTP API share these models."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import ConfigDict, Field, JsonValue
from turnkeeper.contracts.contract_model import ContractModel

EVAL_RUN_WORKFLOW_TYPE: Final = "EvalRunWorkflow"
ACTIVITY_SCORE_EVAL_CASE: Final = "score_eval_case"
ACTIVITY_CHECK_EVAL_SCORERS: Final = "check_eval_scorers"
QUERY_EVAL_PROGRESS: Final = "eval_progress"
# Error type of a run whose input cannot run (unknown scorer): it fails before any case starts.
INVALID_EVAL_RUN: Final = "InvalidEvalRun"
# Who the run's own approval decisions are recorded as (`DecisionRecord.approver`).
EVAL_APPROVER: Final = "turnkeeper-eval"

# `--approvals`: `reject` (the default) and `approve` decide every call that waits for approval
# at once; `policy` leaves them to the turn's own rules (standing approvals, a person, the
# approval timeout), as in production.
ApprovalMode = Literal["reject", "approve", "policy"]
# A case's end: its turn's outcome, `failed` (the turn failed, or its request was invalid) or
# `skipped` (never started: the run's cost cap was spent first).
CaseOutcome = Literal["completed", "max_tokens", "interrupted", "failed", "cancelled", "skipped"]


class EvalCase(ContractModel):
    """One case of a pydantic-evals dataset, as the run carries it."""

    model_config = ConfigDict(extra="forbid")
    name: str
    """The case's `name` (or `case-<n>` when the dataset gives none)."""
    inputs: JsonValue
    """The task text, or a partial `TurnRequest` (`task`, `agent`, `external_tools`, `history`)
    laid over the agent file's request."""
    expected_output: JsonValue = None
    """What the `EqualsExpected` scorer compares with."""
    metadata: JsonValue = None
    """The case's `metadata`, handed to scorers as it is."""
    evaluators: list[JsonValue] = Field(default_factory=list)
    """The dataset's and the case's evaluators, as the dataset file writes them."""


class Score(ContractModel):
    """One scorer's verdict on one case."""

    value: bool | int | float | str
    """What it returned: a pass/fail (bool), a score (number) or a label (str)."""
    reason: str | None = None
    """Why, when the scorer says."""


class CaseResult(ContractModel):
    """One case × model × repetition, as it ended."""

    case: str
    """The case's name."""
    model: str
    """The `provider:model` it ran on."""
    repetition: int = Field(ge=1)
    """Which of `--repeat` runs (1-based)."""
    workflow_id: str | None = None
    """The case's turn (`<run id>/…`); None when it never started."""
    outcome: CaseOutcome
    """How the turn ended."""
    error: str | None = None
    """Why it failed or was skipped."""
    output: JsonValue = None
    """The turn's structured output, else its text."""
    cost_usd: float = 0.0
    """What the turn's model calls cost."""
    judge_cost_usd: float = 0.0
    """What the scorers' own model calls (an `LLMJudge`) cost; the run's budget counts both."""
    duration_ms: int = 0
    """The turn's wall time."""
    iterations: int = 0
    """The turn's iterations."""
    approvals: list[dict[str, JsonValue]] = Field(default_factory=list)
    """Each approval decided in the turn: `tool`, `approved`, `approver`."""
    scores: dict[str, Score] = Field(default_factory=dict)
    """By scorer name."""
    scorer_errors: dict[str, str] = Field(default_factory=dict)
    """Scorers that could not judge, by name: the case does not pass."""

    @property
    def total_cost_usd(self) -> float:
        """The turn's and its judge's model calls: what the case cost the run."""
        return self.cost_usd + self.judge_cost_usd

    @property
    def passed(self) -> bool:
        """Completed, every scorer judged, and every pass/fail scorer passed."""
        if self.outcome not in ("completed", "max_tokens") or self.scorer_errors:
            return False
        return all(s.value for s in self.scores.values() if isinstance(s.value, bool))


class EvalRunInput(ContractModel):
    """The input of `EvalRunWorkflow`; a run that continues as new carries its progress in
    `results` and `spent_usd`."""

    model_config = ConfigDict(extra="forbid")
    dataset: str
    """The dataset's name."""
    request: dict[str, JsonValue]
    """The agent file: a `TurnRequest` (or its `agent` alone) every case's request is laid on."""
    models: list[str] = Field(min_length=1)
    """Each case runs once per model (`--model`, else the agent's own)."""
    repeat: int = Field(default=1, ge=1, le=100)
    """Runs of each case per model (pass@k)."""
    concurrency: int = Field(default=4, ge=1, le=200)
    """Most case turns running at once."""
    max_cost_usd: float | None = Field(default=None, gt=0)
    """Once the run has spent it, no further case starts."""
    approvals: ApprovalMode = "reject"
    """Who decides a case's calls that wait for approval."""
    tenant: str | None = None
    """The caller's tenant: every case's turn is billed to it."""
    cases: list[EvalCase] = Field(min_length=1)
    """The dataset's cases."""
    results: list[CaseResult] = Field(default_factory=list)
    """Carried over continue-as-new: the cases already ended, in the order they ended."""


class EvalProgress(ContractModel):
    """The `eval_progress` query's answer, and the run's result."""

    dataset: str
    """The dataset's name."""
    total: int
    """Cases × models × repetitions."""
    running: int = 0
    """Case turns running now."""
    results: list[CaseResult] = Field(default_factory=list)
    """Every case run that ended (or was skipped), in the order they ended; from the
    `results_from`-th on."""
    results_from: int = 0
    """How many results come before `results[0]`: the query's `since` (0: all of them)."""
    spent_usd: float = 0.0
    """What the case turns have cost so far."""
    max_cost_usd: float | None = None
    """The run's cost cap (`--max-cost`)."""
    approvals: ApprovalMode = "reject"
    """Who decided the calls that waited for approval (`--approvals`)."""
    models: list[str] = Field(default_factory=list)
    """The models every case runs on, in order."""
    repeat: int = 1
    """Runs of each case per model."""
    done: bool = False
    """The run has ended: every case ran or was skipped."""


class ScoreCaseInput(ContractModel):
    """What the `score_eval_case` activity reads: the case, and its turn's facts."""

    case: EvalCase
    """The case, with its scorers."""
    output: JsonValue = None
    """The turn's structured output, else its text."""
    outcome: str
    """The turn's outcome."""
    cost_usd: float = 0.0
    """What the turn cost."""
    duration_ms: int = 0
    """The turn's wall time (`MaxDuration` reads it)."""
    iterations: int = 0
    """The turn's iterations."""
    structured: bool = False
    """The agent has an `output_schema` and the turn returned `structured_output`."""
    approvals: list[dict[str, JsonValue]] = Field(default_factory=list)
    """Each approval decided in the turn."""
    conversation_ref: str | None = None
    """The turn's stored conversation: the tools it called, with their arguments."""
    capped: bool = False
    """The run has a cost cap: a scorer whose model has no price is refused, not run free."""


class ScoreCaseResult(ContractModel):
    """What `score_eval_case` returns: each scorer's verdict, or why it could not judge."""

    scores: dict[str, Score] = Field(default_factory=dict)
    """By scorer name (a scorer returning a dict gives one score per key)."""
    scorer_errors: dict[str, str] = Field(default_factory=dict)
    """Scorers that raised, by name: what they raised."""
    judge_cost_usd: float = 0.0
    """What the scorers' model calls cost (an `LLMJudge`), priced as a turn's are."""


class CheckScorersInput(ContractModel):
    """What `check_eval_scorers` reads: the scorers a run's dataset names."""

    evaluators: list[JsonValue] = Field(default_factory=list)
    """Every evaluator spec of the dataset."""
