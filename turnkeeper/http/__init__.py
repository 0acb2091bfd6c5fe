"""The HTTP API of `turnkeeper serve` (docs/http-api.md): turns over HTTP for any language, as
identities that bearer tokens authenticate, and the approval inbox at `/`. It stands on the
library client (`turnkeeper.client`) and loads nothing of the worker or the console.

- `app`: `create_app`, the FastAPI app: the `/v1/…` endpoints, the inbox, `/openapi.json`.
- `turns`: `TurnService`, what the endpoints do to turns, over the client.
- `origins`: what a turn was started with (its current run's request and `StartedBy`), per run.
- `errors`: `ApiError`, and the one 404 of a missing turn (also for a turn the caller may not see).
- `decisions`: a decision as the token's identity: 403/404/409 before the `decide` update, signed
  with the identity's key where it has one.
- `access`: who may do what: a member's turn billed to its tenant, prices for operators only,
  a turn seen by its owner, its agent's approvers and the operators (404 to anyone else).
- `audit`: the `api_call` log line of every state-changing request, refusals included.
- `tokens`: the token file: identities with a role and a tenant, and the SHA-256 of their tokens.
- `auth`: sign-in from the `Authorization` header; failed sign-ins limited per address.
- `serve`: uvicorn, with the proxy headers of `--forwarded-allow-ips`, the edge and the deadline.
- `edge`: before the app: the body limit (413) and `nosniff` on every answer.
- `deadline`: uvicorn's h11 protocol with a deadline for receiving each request (408).
- `inbox`: the inbox's routes, the page under its Content-Security-Policy.
- `static/`: the inbox page, its script and its styles (no build step).
"""
