"""The library client: what a Python program uses to start turns and sessions, follow them and
decide what waits for a human (`turnkeeper.connect`, `turnkeeper.start_turn`, …). It loads no
console package (typer, rich) and nothing of the worker's room.

- `client`: `TurnHandle`, `start_turn`, `turn`, `pending`: a turn from Python.
- `sessions`: `SessionHandle`, `start_session`, `session`: a conversation of many turns.
- `connection`: `connect`, the one way to reach Temporal, with the project's data converter.
- `settings_error`: `SettingsError`, configuration a process cannot use (raised from here up).
- `env_numbers`: whole numbers from environment variables, with errors that name them.
- `attachments`: a request's images and documents, stored before the turn starts.
- `telemetry_options`: the tracing plugin and metrics runtime that telemetry hands `connect`.
- `turns`: the turn operations under the handle: start, status, what is pending, who waits.
- `signatures`: decisions and budget extensions signed for what the turn waits on.
- `approvals`: list and revoke an agent's standing approvals.
- `events`: a turn's event stream, from its first event to its last.
- `requests`: a `TurnRequest` from `turnkeeper run`'s flags and an agent file.
- `errors`: the public exceptions: a failed turn by error type, refused decisions and sends
  (`refused`: the one mapping of an update's refusal).
- `programs`: how a printed command names its program so that it runs as printed.
"""
