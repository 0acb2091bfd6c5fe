"""`SettingsError`, the one error for configuration a turnkeeper process cannot use.

It lives in the client, the lowest room that raises it (`connect`: an unusable Temporal address,
profile or config file); the worker's settings and probes raise it for their own variables, and
the console turns it into one line for the user.
"""

from __future__ import annotations


class SettingsError(ValueError):
    """An environment variable has a value the worker or the console command cannot use."""
