"""The model-call spans of a turn that falls back: the span of the model that answered names the
model it stood in for, and why."""

from __future__ import annotations

import uuid
from pathlib import Path

from temporalio.client import Client
from temporalio.contrib.opentelemetry import OpenTelemetryPlugin
from turnkeeper.contracts.names import WORKFLOW_TYPE
from turnkeeper.contracts.turn import AgentReport

from tests.conftest import make_settings, new_key, running_worker, scripted_request
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import openai_replies as openai
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_openai import FakeOpenAI
from tests.support.telemetry_capture import capture


async def test_the_answering_span_names_the_skipped_model(
    client: Client, fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    telemetry = capture()
    key = new_key()
    fake_anthropic.script(key, [anthropic.overloaded()] * 2)
    fake_openai.script(key, [openai.tool_calls(("list_files", {"path": "."})), openai.text("ok")])
    settings = make_settings(tmp_path, f"tq-{uuid.uuid4()}")
    telemetry.clear_spans()
    async with running_worker(
        client, settings, fake_anthropic, openai_fake=fake_openai, plugins=[OpenTelemetryPlugin()]
    ):
        request = scripted_request(key, agent={"fallback_models": ["openai:gpt-4.1"]})
        handle = await client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=f"turn-{uuid.uuid4()}",
            task_queue=settings.task_queue,
            result_type=AgentReport,
        )
        report = await handle.result()

    assert report.output == "ok"
    llm = [
        dict(s.attributes or {})
        for s in telemetry.spans()
        if (s.attributes or {}).get("turnkeeper.turn_id") == handle.id
        and (s.attributes or {}).get("openinference.span.kind") == "LLM"
    ]
    failed = [a for a in llm if a["llm.provider"] == "anthropic"]
    answered = [a for a in llm if a["llm.provider"] == "openai"]
    assert [a["turnkeeper.outcome"] for a in failed] == ["LLMTransient", "LLMTransient"]
    assert len(answered) == 2
    first, second = (list(a["turnkeeper.skipped_models"]) for a in answered)
    assert first[0].startswith("anthropic:claude-sonnet-4-6: failed after 2 attempts")
    assert second[0].startswith("anthropic:claude-sonnet-4-6: cooling down")
