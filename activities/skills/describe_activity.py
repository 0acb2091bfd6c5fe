"""The `describe_skills` activity: at the start of a turn with `agent.skills`, what each named
skill is, or a non-retryable `InvalidTurnRequest` naming the skill that cannot be served (it
would only fail the same way again)."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError
from turnkeeper.activities.skills.catalog import SkillCatalog, SkillUnavailable
from turnkeeper.contracts.errors import INVALID_TURN_REQUEST
from turnkeeper.contracts.names import ACTIVITY_DESCRIBE_SKILLS
from turnkeeper.contracts.skill_io import DescribeSkillsInput, DescribeSkillsResult


class SkillActivities:
    """The `describe_skills` activity over one worker's skills."""

    def __init__(self, catalog: SkillCatalog) -> None:
        self._catalog = catalog

    @activity.defn(name=ACTIVITY_DESCRIBE_SKILLS)
    async def describe_skills(self, request: DescribeSkillsInput) -> DescribeSkillsResult:
        """Each skill of `request.skills`, in order, with the instructions of `always` ones."""
        try:
            return self._catalog.describe(request)
        except SkillUnavailable as err:
            raise ApplicationError(
                str(err), type=INVALID_TURN_REQUEST, non_retryable=True
            ) from None
