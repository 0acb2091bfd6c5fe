"""structlog as a worker needs it: without rich, colorama and better-exceptions.

`import structlog` imports each of those that is installed, for its console renderer and its
pretty tracebacks (rich with pygments: 4.6 MiB of a worker's memory). A worker renders JSON
lines and never uses them, and rich is installed beside it for the console command. structlog
has no switch for this, so the first import hides them: structlog records each as absent and
falls back to its plain code (tracebacks as dicts, reprs of locals). A process that loaded rich
before (the console command) keeps structlog's rich support.
"""

from __future__ import annotations

import sys
from types import ModuleType

# The optional imports of structlog's `dev` and `tracebacks` modules.
_PRETTY_EXTRAS = ("rich", "colorama", "better_exceptions")


def _import_structlog() -> ModuleType:
    if "structlog" in sys.modules:
        return sys.modules["structlog"]
    hidden = [name for name in _PRETTY_EXTRAS if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # `import rich` raises ImportError
    try:
        import structlog
        import structlog.tracebacks  # imports rich too, when it can
    finally:
        for name in hidden:
            if sys.modules.get(name, ...) is None:
                del sys.modules[name]
    return structlog


structlog = _import_structlog()
