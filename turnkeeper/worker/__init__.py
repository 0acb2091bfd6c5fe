"""The worker process: `turnkeeper.run_worker` and everything it runs with, from its settings to
its probes. Its composition root (`wiring`) puts `turnkeeper.workflows` and
`turnkeeper.activities` together; they know only `turnkeeper.contracts` (and activities the
payloads), never each other; pyproject.toml's `[tool.importlinter]` holds the lines.

- `run`: `run_worker`: connects, wires, checks the server and runs until stopped.
- `plugin`: `TurnkeeperPlugin`, turnkeeper in any Temporal client and worker (`run` uses it).
- `wiring`: the composition root: activities from settings, the workflows and their sandbox.
- `sandbox_runner`: the workflow sandbox, entered once per activation.
- `settings`: the worker's settings read from the environment.
- `worker_tuning`: the worker's Temporal settings, measured and overridable.
- `versioning`: which Worker Deployment and build a worker belongs to.
- `required_encryption`: `TURNKEEPER_REQUIRE_ENCRYPTION` on the worker's side.
- `logging`: JSON-lines logging for the worker and the console command.
- `plain_structlog`: structlog imported without the pretty printers a worker never uses.
- `health`: probes and metrics on `TURNKEEPER_HEALTH_PORT`.
- `telemetry`: OpenTelemetry from the standard `OTEL_*` variables.
- `telemetry_exporters`: the span exporters and metric readers those variables name.
- `temporal_metrics`: Temporal's own SDK metrics, chosen by the same variables.
- `prometheus_reader`: a Prometheus reader that frees its port on shutdown.
"""
