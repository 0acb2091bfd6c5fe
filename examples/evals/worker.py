"""A worker with a scorer of its own, for `turnkeeper eval` on examples/evals/summaries.yaml.

    python examples/evals/worker.py --dev     # a local dev server with its Web UI, and the worker
    turnkeeper eval examples/evals/summaries.yaml --agent examples/evals/agent.json

The agent runs the offline demo model: no API key needed. Polls AGENT_TASK_QUEUE (default
`agent-turns`). The cases read and summarize the workspace's files: an empty workspace gets the
sample notes `turnkeeper demo` writes.
"""

from __future__ import annotations

import argparse
import asyncio

from pydantic_evals.evaluators import EvaluationReason, EvaluatorContext

import turnkeeper
from turnkeeper.console.demo import seed_workspace
from turnkeeper.worker.settings import Settings


@turnkeeper.evaluator
def mentions_summary(ctx: EvaluatorContext, word: str = "summary") -> EvaluationReason:
    """The answer talks of the summary (a dataset may give another `word`)."""
    found = word in str(ctx.output).lower()
    return EvaluationReason(found, reason=None if found else f"no {word!r} in the answer")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", action="store_true", help="start a local Temporal dev server")
    args = parser.parse_args()
    seed_workspace(Settings.from_env().workspace)
    asyncio.run(turnkeeper.run_worker(evaluators=[mentions_summary], dev=args.dev))
