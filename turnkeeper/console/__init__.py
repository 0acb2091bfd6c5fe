"""The `turnkeeper` command (typer and rich) and `python worker.py`'s command line, over the
library client, the worker and the dev tools.

- `cli`: the command line: parses options and runs one command (`turnkeeper = ...cli:app`).
- `commands`: what each console command does, as async functions returning the exit code.
- `terminal`: the two rich consoles, the command's error type, where diagnostics go.
- `render`: reports, failures, status, transcripts and pending calls as the terminal shows them.
- `watch`: `turnkeeper watch`, the live view of a turn's event stream.
- `chat`: `turnkeeper chat`, a session at the terminal.
- `signing`: `approve|reject … --key FILE`, decisions signed with a key file.
- `extend_command`: `turnkeeper extend`, more budget for a turn that waits for it.
- `codec_command`: `turnkeeper codec-server` and `turnkeeper keys new`.
- `deploy_command`: `turnkeeper deploy status|promote|ramp|rollback`.
- `demo`: `turnkeeper demo`, the whole runtime offline.
- `demo_revisit`: what the demo prints last, to come back to its run.
- `worker_cli`: `python worker.py [--dev]`, the worker's command line.
- `schedule_command`: `turnkeeper schedule …`, turns on a clock (Temporal Schedules).
"""
