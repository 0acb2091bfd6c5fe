"""One OpenTelemetry span per turn, opened in workflow code and safe under replay.

Temporal's `OpenTelemetryPlugin` (installed by `turnkeeper.telemetry`) makes the global tracer
provider a `ReplaySafeTracerProvider`: span and trace ids come from the workflow's seeded random,
so a replayed span has the same id as the original, its children (the model-call and tool
spans in the activities, which receive it through the activity headers) keep their parent, and
a span is ended (exported) only by live code, never while history is replayed or the workflow is
evicted. A worker that replays a turn from the start therefore exports its turn span once.

Without that provider (telemetry off, the Replayer, tests without the plugin) `turn_span`
yields a handle that does nothing, so workflow code never depends on telemetry being on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Span, Status, StatusCode
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider
    from turnkeeper.contracts.guardrails import GuardrailDecision
    from turnkeeper.contracts.policies import PolicyDecision
    from turnkeeper.contracts.turn import AgentReport

TRACER_NAME: Final = "turnkeeper.workflows"
SPAN_NAME: Final = "turn"
# Custom span attributes where OpenInference has no convention. (Their values keep the names
# the README documents, `turnkeeper.llm_calls` among them.)
SPAN_ATTR_WORKFLOW_ID: Final = "turnkeeper.workflow_id"
SPAN_ATTR_RUN_ID: Final = "turnkeeper.run_id"
SPAN_ATTR_TASK_ID: Final = "turnkeeper.task_id"
SPAN_ATTR_MODEL: Final = "turnkeeper.model"
SPAN_ATTR_OUTCOME: Final = "turnkeeper.outcome"
SPAN_ATTR_ERROR_TYPE: Final = "turnkeeper.error_type"
SPAN_ATTR_COST_USD: Final = "turnkeeper.cost_usd"
SPAN_ATTR_MODEL_CALLS: Final = "turnkeeper.llm_calls"
SPAN_ATTR_TOOL_CALLS: Final = "turnkeeper.tool_calls"
SPAN_ATTR_ITERATIONS: Final = "turnkeeper.iterations"
SPAN_ATTR_CONTINUED_AS_NEW: Final = "turnkeeper.continued_as_new"
# Every guardrail verdict so far, one `guardrail:stage:verdict:enforced|log_only` string each.
SPAN_ATTR_GUARDRAIL_DECISIONS: Final = "turnkeeper.guardrail_decisions"
SPAN_ATTR_POLICY_DECISIONS: Final = "turnkeeper.policy_decisions"


class TurnSpan:
    """The open span of one turn (one run, when the turn continues as new)."""

    def __init__(self, span: Span | None) -> None:
        self._span = span

    def describe(self, agent_id: str, task_id: str, model: str) -> None:
        """Name the turn once its request is known."""
        if self._span is None:
            return
        self._span.update_name(f"{SPAN_NAME} {agent_id}")
        self._span.set_attributes(
            {
                SpanAttributes.AGENT_NAME: agent_id,
                SpanAttributes.SESSION_ID: task_id,
                SPAN_ATTR_TASK_ID: task_id,
                SPAN_ATTR_MODEL: model,
            }
        )

    def guardrail_decided(self, decisions: list[GuardrailDecision]) -> None:
        """The turn's guardrail verdicts so far, as one attribute (rewritten at each)."""
        if self._span is None:
            return
        self._span.set_attribute(
            SPAN_ATTR_GUARDRAIL_DECISIONS,
            [
                f"{d.guardrail}:{d.stage}:{d.verdict}:{'enforced' if d.enforced else 'log_only'}"
                for d in decisions
            ],
        )

    def policy_decided(self, decisions: list[PolicyDecision]) -> None:
        """Every policy decision so far, one `call_id tool effect enforced|log_only` each."""
        if self._span is None:
            return
        self._span.set_attribute(
            SPAN_ATTR_POLICY_DECISIONS,
            [
                f"{d.call_id} {d.tool} {d.effect} {'enforced' if d.enforced else 'log_only'}"
                for d in decisions
            ],
        )

    def finish(self, report: AgentReport, error_type: str | None = None) -> None:
        """Put the turn's outcome and counters on the span (it ends when `turn_span` exits)."""
        if self._span is None:
            return
        self._span.update_name(f"{SPAN_NAME} {report.agent_id}")
        self._span.set_attributes(
            {
                # Also here for a turn that failed before `describe` (an invalid request).
                SpanAttributes.AGENT_NAME: report.agent_id,
                SpanAttributes.SESSION_ID: report.task_id,
                SPAN_ATTR_TASK_ID: report.task_id,
                SPAN_ATTR_OUTCOME: report.outcome,
                SPAN_ATTR_COST_USD: report.cost_usd,
                SPAN_ATTR_MODEL_CALLS: report.llm_calls,
                SPAN_ATTR_TOOL_CALLS: report.tool_calls,
                SPAN_ATTR_ITERATIONS: report.iterations,
            }
        )
        if error_type:
            self._span.set_attribute(SPAN_ATTR_ERROR_TYPE, error_type)
            self._span.set_status(Status(StatusCode.ERROR, error_type))


@contextmanager
def turn_span() -> Iterator[TurnSpan]:
    """Open the turn's span around the body of the workflow's `run`. It is the current span
    inside, so every activity scheduled there gets it as parent.

    The span ends when the block ends, is cancelled, continues as new or fails the workflow
    (`ApplicationError`, with an error status). It does not end when an ordinary exception fails
    the workflow *task*: Temporal retries the task, and the retry ends it.
    """
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        yield TurnSpan(None)
        return
    info = workflow.info()
    attributes = {
        SpanAttributes.OPENINFERENCE_SPAN_KIND: OpenInferenceSpanKindValues.AGENT.value,
        SPAN_ATTR_WORKFLOW_ID: info.workflow_id,
        SPAN_ATTR_RUN_ID: info.run_id,
    }
    span = provider.get_tracer(TRACER_NAME).start_span(SPAN_NAME, attributes=attributes)
    # Made current and ended by hand, not by use_span: see _end_after, and the GeneratorExit below.
    token = otel_context.attach(trace.set_span_in_context(span))
    closed_by_collector = False
    try:
        yield TurnSpan(span)
    except workflow.ContinueAsNewError:
        span.set_attribute(SPAN_ATTR_CONTINUED_AS_NEW, True)
        _end_after(span, None)
        raise
    except GeneratorExit:
        # An evicted run's coroutine closed by the garbage collector, in another context than
        # the one the token belongs to: detaching there only logs "Failed to detach context".
        closed_by_collector = True
        raise
    except BaseException as err:
        _end_after(span, err)
        raise
    else:
        _end_after(span, None)
    finally:
        if not closed_by_collector:
            otel_context.detach(token)


def _end_after(span: Span, err: BaseException | None) -> None:
    # Garbage collection can close the generator of an evicted workflow outside the workflow;
    # ending the span there would export it a second time.
    if not workflow.in_workflow():
        return
    if isinstance(err, Exception):
        if not workflow.is_failure_exception(err):
            return
        span.record_exception(err)
        span.set_status(Status(StatusCode.ERROR, f"{type(err).__name__}: {err}"))
    # The replay-safe span ignores end() while history is replayed or the workflow evicted.
    span.end()


COMPACTION_SPAN_NAME: Final = "compaction"


@contextmanager
def compaction_span(attributes: dict[str, str | int]) -> Iterator[Span | None]:
    """A child span of the turn around one compaction (a summary's model call nests in it). It
    carries counts only, never content: spans leave the codec's protection."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        yield None
        return
    prefixed = {f"turnkeeper.compaction.{name}": value for name, value in attributes.items()}
    span = provider.get_tracer(TRACER_NAME).start_span(COMPACTION_SPAN_NAME, attributes=prefixed)
    with trace.use_span(span, record_exception=False, set_status_on_exception=False):
        try:
            yield span
        except BaseException as err:
            _end_after(span, err)
            raise
    _end_after(span, None)
