"""AG-UI for served agents (docs/ag-ui.md): `POST /v1/agents/{agent_id}/ag-ui` of
`turnkeeper serve --agents DIR` takes AG-UI's `RunAgentInput` and answers with its event stream
(the `ag-ui-protocol` package's types and encoder).

- `run_input`: what a `RunAgentInput` asks (a new user message, or `resume`).
- `translation`: a turn's events as AG-UI events (no I/O).
- `interrupts`: approvals as AG-UI 1.0 interrupts, and the answers in `resume` as decisions.
- `run`: one run over a turn, from `RUN_STARTED` to its end; `route`: the endpoint.

`start_run` and `TurnRun.events()` are the run without HTTP (a benchmark's way in).
"""

from turnkeeper.http.agui.route import PATH, add_ag_ui, start_run
from turnkeeper.http.agui.run import RunIds, TurnRun, sse
from turnkeeper.http.agui.translation import Translation

__all__ = [
    "PATH",
    "RunIds",
    "Translation",
    "TurnRun",
    "add_ag_ui",
    "sse",
    "start_run",
]
