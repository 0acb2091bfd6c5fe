"""Both providers, a named endpoint and the fallback chain in `python worker.py`, configured only
by the variables the README names (`ANTHROPIC_*`, `OPENAI_*`, `TURNKEEPER_PROVIDERS`) and driven
through `turnkeeper run`, the `temporal` CLI and the Python client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnkeeper
from tests.conftest import new_key
from tests.fakes import fake_anthropic as anthropic
from tests.fakes import openai_replies as openai
from tests.fakes.anthropic_cache import MIN_CACHEABLE_TOKENS
from tests.fakes.fake_openai import FakeOpenAI
from tests.system.conftest import SystemStack, WorkerProcess
from tests.system.driving import GPT, SONNET, agent, connect_like, task

# Tools and system prompt alone reach the fake's minimum cacheable prefix, so calls cache.
LONG_PROMPT = "You keep careful notes. " * (MIN_CACHEABLE_TOKENS // 5)


async def openai_worker(stack: SystemStack, fake_openai: FakeOpenAI, **env: str) -> WorkerProcess:
    """A worker whose `openai:` provider is the fake, through the SDK's own variables."""
    return await stack.start_worker(
        env={"OPENAI_BASE_URL": f"{fake_openai.base_url}/v1", "OPENAI_API_KEY": "sk-openai", **env}
    )


def sent_key(headers: dict[str, str]) -> str | None:
    """The API key a request carried, in either of the headers the SDKs send it in."""
    bearer = headers.get("authorization", "").removeprefix("Bearer ")
    return headers.get("x-api-key") or bearer or None


async def test_turnkeeper_run_streams_an_agent_file_on_anthropic_with_the_prompt_cache(
    stack: SystemStack, tmp_path: Path
) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(
        key,
        [anthropic.tool_calls(("list_files", {"path": "."})), anthropic.text("Nothing there.")],
        prompt_cache=True,
    )
    agent_file = tmp_path / "agent.json"
    agent_file.write_text(
        json.dumps(
            agent(
                key,
                system_prompt=f"{LONG_PROMPT} [script:{key}]",
                tools=["list_files"],
                stream=True,
            )
        )
    )

    done = await stack.turnkeeper(
        "run", "--agent", str(agent_file), "--task-queue", worker.task_queue,
        "List the workspace.", worker=worker,
    )  # fmt: skip

    assert all(request.body.get("stream") for request in stack.fake.requests_for(key))
    calls = worker.events("llm_call")
    assert [call["cache_read_tokens"] > 0 for call in calls] == [False, True]
    read = sum(call["cache_read_tokens"] for call in calls)
    written = sum(call["cache_write_tokens"] for call in calls)
    assert written > 0
    assert f"{read:,} read / {written:,} written" in done.stdout, done.stdout
    [completed] = worker.events("turn_completed")
    assert (completed["cache_read_tokens"], completed["cache_write_tokens"]) == (read, written)
    # The key came from ANTHROPIC_API_KEY, the address from ANTHROPIC_BASE_URL.
    assert {sent_key(r.headers) for r in stack.fake.requests_for(key)} == {"test-key"}


async def test_an_openai_turn_streams_to_the_python_client(
    stack: SystemStack, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await openai_worker(stack, fake_openai)
    key = new_key()
    fake_openai.script(
        key,
        [
            openai.tool_calls(("list_files", {"path": "."})),
            openai.text("The workspace is empty, as expected.", cached_tokens=6),
        ],
    )
    client = await connect_like(worker, monkeypatch)

    handle = await turnkeeper.start_turn(
        client, agent=agent(key, GPT, stream=True, tools=["list_files"]), task=task(key)
    )
    events = [event async for event in handle.events()]
    report = await handle.result()

    assert report.output == "The workspace is empty, as expected."
    assert (report.models_used, report.tool_calls) == ([GPT], 1)
    assert report.usage.cache_read_tokens == 6  # prompt_tokens_details.cached_tokens
    streamed = "".join(event.text or "" for event in events if event.kind == "text_delta")
    assert streamed == report.output
    requests = fake_openai.requests_for(key)
    assert {sent_key(r.headers) for r in requests} == {"sk-openai"}
    assert all(r.body["stream"] for r in requests)


async def test_named_endpoints_use_their_own_key_variables(
    stack: SystemStack, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, claude = f"{fake_openai.base_url}/v1", stack.fake.base_url
    endpoints = {
        "local": {"kind": "openai", "base_url": url, "api_key_env": "LOCAL_KEY"},
        "backup": {"kind": "anthropic", "base_url": claude, "api_key_env": "BACKUP_KEY"},
        "spare": {"kind": "openai", "base_url": url, "api_key_env": "SPARE_KEY"},
    }
    worker = await openai_worker(
        stack,
        fake_openai,
        TURNKEEPER_PROVIDERS=json.dumps(endpoints),
        LOCAL_KEY="sk-local",
        BACKUP_KEY="sk-backup",
    )
    key, backup = new_key(), new_key()
    fake_openai.script(key, [openai.text("Answered locally.")])
    stack.fake.script(backup, [anthropic.text("Answered by the backup.")])
    request = {"agent": agent(key, "local:qwen3-8b"), "task": task(key)}

    await stack.temporal(
        "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", worker.task_queue,
        "--workflow-id", f"turn-{key}", "--input", json.dumps(request),
    )  # fmt: skip
    answer = await stack.temporal("workflow", "result", "--workflow-id", f"turn-{key}")
    client = await connect_like(worker, monkeypatch)
    backed = await turnkeeper.start_turn(
        client, agent=agent(backup, "backup:claude-sonnet-4-6"), task=task(backup)
    )
    spare = await turnkeeper.start_turn(
        client, agent=agent(new_key(), "spare:qwen3-8b"), task=task(key)
    )

    report = answer["result"]
    assert (report["output"], report["models_used"]) == ("Answered locally.", ["local:qwen3-8b"])
    [sent] = fake_openai.requests_for(key)
    # Neither OPENAI_API_KEY nor the max_completion_tokens of the built-in `openai` provider.
    assert sent_key(sent.headers) == "sk-local"
    assert "max_tokens" in sent.body and "max_completion_tokens" not in sent.body
    assert (await backed.result()).models_used == ["backup:claude-sonnet-4-6"]
    assert [sent_key(r.headers) for r in stack.fake.requests_for(backup)] == ["sk-backup"]
    # An endpoint whose key variable is unset refuses its calls, naming the variable.
    with pytest.raises(turnkeeper.LLMAuthError, match="SPARE_KEY is not set on the worker"):
        await spare.result()


async def test_the_fallback_chain_answers_with_the_second_model(
    stack: SystemStack, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await openai_worker(stack, fake_openai)
    key = new_key()
    stack.fake.script(key, [anthropic.overloaded()])  # every attempt: 529
    fake_openai.script(key, [openai.text("Answered by the fallback.")])
    client = await connect_like(worker, monkeypatch)

    handle = await turnkeeper.start_turn(
        client, agent=agent(key, fallback_models=[GPT]), task=task(key)
    )
    report = await handle.result()
    events = [event async for event in handle.events()]

    assert (report.output, report.models_used) == ("Answered by the fallback.", [GPT])
    assert len(stack.fake.requests_for(key)) == 2  # fallback_after_attempts: 2 by default
    [skipped] = [event for event in events if event.kind == "model_skipped"]
    assert skipped.model == SONNET and "failed after 2 attempts" in (skipped.reason or "")
    [call] = worker.events("llm_call")
    [why] = call["skipped"]
    assert call["model"] == GPT and why.startswith(f"{SONNET}: failed after 2 attempts")


async def test_an_auth_refusal_falls_back_only_when_the_request_opts_in(
    stack: SystemStack, fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = await openai_worker(stack, fake_openai)
    refused, opted_in = new_key(), new_key()
    for key in (refused, opted_in):
        stack.fake.script(key, [anthropic.error(401, "authentication_error", "bad key")])
        fake_openai.script(key, [openai.text("Answered by the fallback.")])
    client = await connect_like(worker, monkeypatch)

    silent = await turnkeeper.start_turn(
        client, agent=agent(refused, fallback_models=[GPT]), task=task(refused)
    )
    with pytest.raises(turnkeeper.LLMAuthError):
        await silent.result()
    # The same chain from turnkeeper run's flags, opted in to falling back on a refusal.
    asked = await stack.turnkeeper(
        "run", "--model", SONNET, "--fallback-model", GPT, "--fallback-on", "auth",
        "--system", f"[script:{opted_in}]", "--task-queue", worker.task_queue, "--json",
        "Answer.", worker=worker,
    )  # fmt: skip

    assert fake_openai.requests_for(refused) == []
    report = json.loads(asked.stdout)
    assert (report["output"], report["models_used"]) == ("Answered by the fallback.", [GPT])
    assert len(stack.fake.requests_for(opted_in)) == 1  # a refusal is never retried


async def test_structured_output_through_the_temporal_cli(stack: SystemStack) -> None:
    worker = await stack.start_worker()
    key = new_key()
    stack.fake.script(key, [anthropic.text("About four."), anthropic.text('{"files": 4}')])
    schema = {"type": "object", "properties": {"files": {"type": "integer"}}, "required": ["files"]}
    request = {"agent": agent(key, tools=[], output_schema=schema), "task": task(key)}

    await stack.temporal(
        "workflow", "start", "--type", "AgentTurnWorkflow", "--task-queue", worker.task_queue,
        "--workflow-id", f"turn-{key}", "--input", json.dumps(request),
    )  # fmt: skip
    answer = await stack.temporal("workflow", "result", "--workflow-id", f"turn-{key}")

    report = answer["result"]
    assert (report["structured_output"], report["llm_calls"]) == ({"files": 4}, 2)
    # The answer that did not parse went back to the model with what is wrong.
    correction = stack.fake.requests_for(key)[1].body["messages"][-1]
    assert correction["role"] == "user" and "JSON" in json.dumps(correction["content"])
