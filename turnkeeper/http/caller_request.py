"""`CallerRequest`: a `TurnRequest` as a caller of the HTTP API may send it, the body of
`POST /v1/turns` and `POST /v1/schedules`: what only the runtime sets is refused by name."""

from __future__ import annotations

from pydantic import ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from turnkeeper.contracts.turn import TurnRequest


class CallerRequest(TurnRequest):
    """A `TurnRequest` without the fields the runtime sets."""

    # Declared only to be refused with a reason (left out of the schema: no caller may send them).
    parent: SkipJsonSchema[None] = None
    """Refused: the runtime sets it on the turns of sub-agents it starts."""
    started_by: SkipJsonSchema[None] = None
    """Refused: the server sets it to the identity that signed in."""

    @field_validator("parent", "started_by", mode="before")
    @classmethod
    def _runtime_sets(cls, value: object, info: ValidationInfo) -> None:
        # Present at all is refused, null included: a caller who sends one believes it counts.
        raise ValueError(f"{info.field_name} is set by the runtime, never by a caller")

    def turn_request(self) -> TurnRequest:
        """The request alone, as the caller set it (the body's own fields left out)."""
        fields = self.model_dump(
            include=set(TurnRequest.model_fields) - {"parent", "started_by"}, exclude_unset=True
        )
        return TurnRequest.model_validate(fields)
