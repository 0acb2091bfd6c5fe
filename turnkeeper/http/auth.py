"""Who is calling: the bearer token of a `/v1/…` request, its identity, and the limit on failed
sign-ins per client address.

The limit is a few lines here rather than a rate-limiting package: those count every request,
while only failures must be limited (a busy approver must never be slowed), per client address:
the socket's peer, or what a proxy named in `--forwarded-allow-ips` reports (`serve`).
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from typing import Final

from turnkeeper.http.tokens import Identity, TokenStore
from turnkeeper.http.turns import ApiError

MAX_FAILURES: Final = 10
WINDOW_S: Final = 60.0


class FailedSignIns:
    """Failed sign-ins per client address in a sliding window of `window_s` seconds."""

    def __init__(self, limit: int = MAX_FAILURES, window_s: float = WINDOW_S) -> None:
        self.limit = limit
        self.window_s = window_s
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def _recent(self, address: str) -> deque[float]:
        failures = self._failures[address]
        cutoff = time.monotonic() - self.window_s
        while failures and failures[0] < cutoff:
            failures.popleft()
        if not failures:
            # Addresses that stopped failing leave no entry behind (memory bounded by attackers
            # active within one window).
            del self._failures[address]
            return deque()
        return failures

    def retry_after(self, address: str) -> int | None:
        """Seconds until `address` may try again, or None when it may now."""
        failures = self._recent(address)
        if len(failures) < self.limit:
            return None
        return max(1, int(failures[0] + self.window_s - time.monotonic()) + 1)

    def record(self, address: str) -> None:
        self._failures[address].append(time.monotonic())


def sign_in(
    tokens: TokenStore, failures: FailedSignIns, authorization: str | None, address: str
) -> Identity:
    """The identity of an `Authorization: Bearer <token>` header.

    The token is checked first, so a valid one always signs in, even from an address over the
    limit (a colleague behind the same NAT as a scanner, or the approver whose typo came first).
    Letting a right token through there gives a guesser nothing: tokens are 256 random bits.

    Raises:
        ApiError: 429 for a missing or wrong token from an address that has failed too often
            (not counted again: its window ends on time); else 401 (the token itself is never
            repeated in a message or a log).
    """
    scheme, _, token = (authorization or "").partition(" ")
    identity = tokens.identify(token.strip()) if scheme.lower() == "bearer" else None
    if identity is not None:
        return identity
    wait = failures.retry_after(address)
    if wait is not None:
        raise ApiError(429, f"too many failed sign-ins from this address; retry in {wait} s", wait)
    failures.record(address)
    problem = "invalid token" if authorization else "missing Authorization: Bearer <token>"
    raise ApiError(401, problem)
