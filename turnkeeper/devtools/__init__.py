"""Tools around a deployment rather than inside a turn: the embedded Temporal dev server, the
codec server for the Web UI, and a Worker Deployment's routing.

- `devserver`: the embedded `temporal server start-dev` and its search attributes.
- `dev_server_guard`: the guard process that stops the dev server with its parent.
- `dev_stack`: `--dev`'s stack: a codec server, then a dev server whose Web UI uses it.
- `codec_server`: Temporal's remote codec protocol, decrypting for the Web UI and the CLI.
- `codec_errors`: the codec server's configuration error, without the server's aiohttp.
- `deployments`: a Worker Deployment's versions: status, promote, ramp, rollback.
"""
