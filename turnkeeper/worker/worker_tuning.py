"""The worker's Temporal settings, chosen by measurement (`python -m bench.run`, sweep in the
README's performance section) and overridable from the environment.

- Pollers: 10 workflow-task and 10 activity-task polls in flight instead of Temporal's 5. A turn
  is a chain of short tasks; with 10, 100 concurrent turns took 1.21-1.24x the floor's wall in
  three runs against 1.25-1.37x with 5 (and 1.38x with 2): a small gain at the cost of a few
  idle long-poll connections.
- Sticky cache: Temporal's 1,000. A smaller cache holds parked turns in less memory (1,000
  parked turns: 1.2x the RSS of bare parked workflows with 250 against 1.8x with 1,000), but a
  cache smaller than the turns a worker actively runs makes every workflow task replay its
  turn: 1,000 concurrent turns on one worker took 357 s with 250 against 92 s for the floor.
  Lower it (TURNKEEPER_MAX_CACHED_WORKFLOWS) only on workers that mostly hold parked turns.
- Left at Temporal's defaults, measured no better when changed: concurrent workflow tasks (100;
  10 and 20 within noise), concurrent activities (100), eager activity execution (on: turning it
  off made 100 concurrent turns 14 % slower).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from temporalio.worker import PollerBehaviorSimpleMaximum

from turnkeeper.client.env_numbers import whole_number

MAX_CACHED_WORKFLOWS_ENV = "TURNKEEPER_MAX_CACHED_WORKFLOWS"
WORKFLOW_TASK_POLLERS_ENV = "TURNKEEPER_WORKFLOW_TASK_POLLERS"
ACTIVITY_TASK_POLLERS_ENV = "TURNKEEPER_ACTIVITY_TASK_POLLERS"
MAX_CONCURRENT_ACTIVITIES_ENV = "TURNKEEPER_MAX_CONCURRENT_ACTIVITIES"


@dataclass(frozen=True)
class WorkerTuning:
    """Attributes:
    max_cached_workflows: turns kept in the worker's sticky cache.
    workflow_task_pollers: workflow-task polls in flight.
    activity_task_pollers: activity-task polls in flight.
    max_concurrent_activities: model and tool calls the worker runs at once.
    """

    max_cached_workflows: int = 1000
    workflow_task_pollers: int = 10
    activity_task_pollers: int = 10
    max_concurrent_activities: int = 100

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> WorkerTuning:
        """Each variable overrides one default; an empty one counts as unset.

        Raises:
            ValueError: A variable is not a whole number in its range (the message names it).
        """
        defaults = cls()
        return cls(
            max_cached_workflows=whole_number(
                env, MAX_CACHED_WORKFLOWS_ENV, defaults.max_cached_workflows, minimum=0
            ),
            workflow_task_pollers=whole_number(
                env, WORKFLOW_TASK_POLLERS_ENV, defaults.workflow_task_pollers, minimum=2
            ),
            activity_task_pollers=whole_number(
                env, ACTIVITY_TASK_POLLERS_ENV, defaults.activity_task_pollers, minimum=1
            ),
            max_concurrent_activities=whole_number(
                env, MAX_CONCURRENT_ACTIVITIES_ENV, defaults.max_concurrent_activities, minimum=1
            ),
        )

    def worker_options(self) -> dict[str, Any]:
        """`temporalio.worker.Worker` keyword arguments."""
        return {
            "max_cached_workflows": self.max_cached_workflows,
            "workflow_task_poller_behavior": PollerBehaviorSimpleMaximum(
                self.workflow_task_pollers
            ),
            "activity_task_poller_behavior": PollerBehaviorSimpleMaximum(
                self.activity_task_pollers
            ),
            "max_concurrent_activities": self.max_concurrent_activities,
        }
