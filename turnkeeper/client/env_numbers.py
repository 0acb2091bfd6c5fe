"""Whole numbers read from environment variables, with errors that name the variable.

Not pydantic-settings: the worker reads a handful of numbers, each with its own bounds, and the
errors users see (and tests pin) name the variable and its allowed range in one sentence; a
settings model would add a dependency and word its errors as a validation dump."""

from __future__ import annotations

from collections.abc import Mapping

from turnkeeper.client.settings_error import SettingsError


def whole_number(
    env: Mapping[str, str], name: str, default: int, *, minimum: int, maximum: int | None = None
) -> int:
    """`env[name]` as an int in `[minimum, maximum]`; `default` when unset or empty.

    Raises:
        SettingsError: The value is not a whole number in range (the message names it).
    """
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a whole number, got {raw!r}") from None
    if value < minimum or (maximum is not None and value > maximum):
        bounds = (
            f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        )
        raise SettingsError(f"{name} must be {bounds}, got {value}")
    return value
