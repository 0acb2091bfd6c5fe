"""The ways a turn may end by contract, for tests and the chaos matrix that assert a turn never
ends otherwise (a failure of another type, or none at all, is a defect: a hang or a leak)."""

from __future__ import annotations

from turnkeeper.contracts import errors

# The error types a turn may fail with; every other failure of a turn is a defect.
CONTRACT_ERROR_TYPES = frozenset(
    {
        errors.INVALID_TURN_REQUEST,
        errors.TURN_BUDGET_EXCEEDED,
        errors.MAX_ITERATIONS_EXCEEDED,
        errors.AUTONOMY_BOUNDARY_VIOLATION,
        errors.TOOL_ARGUMENTS_INVALID,
        errors.TURN_INTERNAL_ERROR,
        errors.LLM_UNAVAILABLE,
        *errors.LLM_REFUSALS,
    }
)
