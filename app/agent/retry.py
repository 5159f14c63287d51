"""The retry policy (docs/architecture.md §9): the only listener for failed requests.

A failure reaches the loop as an error finish; the loop logs `agent/request-error`, then asks the
policy whether and when to try the same turn and step again.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from app.llm.errors import DEFAULT_RETRYABLE
from app.llm.routes import Route
from app.session.events import Failure


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retryable: frozenset[str] = field(default_factory=lambda: frozenset(DEFAULT_RETRYABLE))
    max_retries: int = 5
    base_delay: float = 0.5
    max_delay: float = 10.0
    jitter: float = 0.1

    @classmethod
    def of(cls, route: Route) -> RetryPolicy:
        """The policy a route configures (`max_retries`, `retry_base_delay`, `retry_max_delay`,
        `retryable` in its `[[routes]]` table)."""
        return cls(
            retryable=frozenset(route.retryable),
            max_retries=route.max_retries,
            base_delay=route.retry_base_delay,
            max_delay=route.retry_max_delay,
        )

    def delay_for(self, failure: Failure, retry: int, rng: random.Random | None = None) -> float | None:
        """Seconds to wait before retry number `retry` (from 1), or None to give up."""
        if failure.code not in self.retryable or retry > self.max_retries:
            return None
        if failure.retry_after_ms is not None:
            wait = failure.retry_after_ms / 1000
            # A server's Retry-After is honoured up to the policy's longest delay; beyond it, waiting
            # would stall the turn for longer than the user agreed to, so the turn fails clearly.
            return wait if wait <= self.max_delay else None
        delay = min(self.base_delay * 2 ** (retry - 1), self.max_delay)
        spread = delay * self.jitter
        return max(0.0, delay + (rng or random).uniform(-spread, spread))
