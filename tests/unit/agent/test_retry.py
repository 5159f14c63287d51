"""The retry policy of docs/architecture.md §9 and its per-route configuration."""

from __future__ import annotations

import random

import pytest

from app.agent.retry import RetryPolicy
from app.llm.errors import AUTH, MALFORMED_TOOL_CALL, RATE_LIMIT, SERVER, Failure
from app.llm.routes import RouteConfigError, load_catalog


def failure(code: str, retry_after_ms: int | None = None) -> Failure:
    return Failure(code=code, message="x", retry_after_ms=retry_after_ms)


def test_delays_double_from_half_a_second_up_to_ten_within_ten_percent():
    policy = RetryPolicy(max_retries=8)
    rng = random.Random(1)
    for retry, nominal in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 10.0), (7, 10.0)]:
        delay = policy.delay_for(failure(SERVER), retry, rng)
        assert nominal * 0.9 <= delay <= nominal * 1.1


def test_only_retryable_codes_within_the_maximum_are_retried():
    policy = RetryPolicy()
    assert policy.delay_for(failure(AUTH), 1) is None
    assert policy.delay_for(failure(MALFORMED_TOOL_CALL), 1) is not None
    assert policy.delay_for(failure(SERVER), 5) is not None
    assert policy.delay_for(failure(SERVER), 6) is None


def test_retry_after_is_honoured_up_to_the_maximum_delay():
    policy = RetryPolicy()
    assert policy.delay_for(failure(RATE_LIMIT, retry_after_ms=3_000), 1) == 3.0
    assert policy.delay_for(failure(RATE_LIMIT, retry_after_ms=60_000), 1) is None


def test_a_route_configures_its_policy():
    route = load_catalog(
        [{"id": "offline/demo", "max_retries": 1, "retry_base_delay": 2, "retry_max_delay": 3, "retryable": ["AUTH"]}]
    ).get("offline/demo")
    policy = RetryPolicy.of(route)
    assert policy.delay_for(failure(AUTH), 1) == pytest.approx(2, rel=0.1)
    assert policy.delay_for(failure(SERVER), 1) is None
    assert policy.delay_for(failure(AUTH), 2) is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_retries": -1}, "'max_retries' must be a whole number"),
        ({"retry_base_delay": 0}, "'retry_base_delay' must be a positive number"),
        ({"retryable": ["SERVER", "NOPE"]}, "'retryable' must be a list of failure codes"),
        ({"idle_timeout": "soon"}, "'idle_timeout' must be a positive number"),
    ],
)
def test_bad_retry_settings_name_the_key(table, message):
    with pytest.raises(RouteConfigError, match=message):
        load_catalog([{"id": "offline/demo", **table}])
