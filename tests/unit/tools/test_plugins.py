"""The clock and calculator plugins, and switching plugins on and off in the registry."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from app.tools.approval import AutoApprover
from app.tools.plugins import available_plugins, calculator, clock
from app.tools.plugins.calculator import CalculationError, calculate
from app.tools.registry import ToolRegistry
from app.tools.tool import ToolContext, ToolErrorCode, ToolOutcome

pytestmark = pytest.mark.anyio

CONTEXT = ToolContext(AutoApprover(approve_all=False))
NOW = datetime(2026, 7, 1, 12, 30, 0, tzinfo=UTC)


def clock_registry() -> ToolRegistry:
    return ToolRegistry(plugins=[clock.create_plugin(now=lambda: NOW)], enabled_plugins=["clock"])


async def call(registry: ToolRegistry, name: str, **arguments) -> ToolOutcome:
    return await registry.execute(name, json.dumps(arguments), CONTEXT)


# --- clock ---------------------------------------------------------------------------------------


async def test_current_time_in_a_zone_and_in_utc_by_default():
    registry = clock_registry()
    assert (await call(registry, "current_time", timezone="Asia/Shanghai")).content == (
        "2026-07-01T20:30:00+08:00 (Asia/Shanghai, CST, Wednesday)"
    )
    assert (await call(registry, "current_time")).content == "2026-07-01T12:30:00+00:00 (UTC, UTC, Wednesday)"


async def test_current_time_uses_the_real_clock_by_default():
    registry = ToolRegistry(plugins=[clock.create_plugin()], enabled_plugins=["clock"])
    content = (await call(registry, "current_time")).content
    shown = datetime.fromisoformat(content.split(" ")[0])
    assert abs((shown - datetime.now(UTC)).total_seconds()) < 60


async def test_convert_time_between_zones():
    outcome = await call(
        clock_registry(), "convert_time", time="2026-01-15T09:00", from_timezone="America/New_York", to_timezone="Europe/Paris"
    )
    assert outcome.content == (
        "2026-01-15T09:00:00-05:00 (America/New_York, EST, Thursday) = "
        "2026-01-15T15:00:00+01:00 (Europe/Paris, CET, Thursday)"
    )


async def test_convert_a_bare_time_means_today_in_the_source_zone():
    outcome = await call(clock_registry(), "convert_time", time="23:15", from_timezone="Asia/Tokyo", to_timezone="UTC")
    assert outcome.content.startswith("2026-07-01T23:15:00+09:00 (Asia/Tokyo")
    assert "2026-07-01T14:15:00+00:00 (UTC" in outcome.content


async def test_convert_time_refuses_times_the_clocks_skip_and_notes_ambiguous_ones():
    registry = clock_registry()
    gap = await call(registry, "convert_time", time="2026-03-29T02:30", from_timezone="Europe/Paris", to_timezone="UTC")
    assert gap.is_error and "does not exist in Europe/Paris" in gap.content
    twice = await call(registry, "convert_time", time="2026-10-25T02:30", from_timezone="Europe/Paris", to_timezone="UTC")
    assert "2026-10-25T00:30:00+00:00" in twice.content
    assert "occurs twice" in twice.content


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ({"tool": "current_time", "timezone": "Mars/Olympus_Mons"}, "unknown time zone"),
        ({"tool": "current_time", "timezone": "../../etc/passwd"}, "unknown time zone"),
        ({"tool": "convert_time", "time": "yesterday", "from_timezone": "UTC", "to_timezone": "UTC"}, "cannot read"),
        ({"tool": "convert_time", "time": "2026-01-01T10:00+02:00", "from_timezone": "UTC", "to_timezone": "UTC"}, "without a UTC offset"),
    ],
)
async def test_clock_rejects_bad_input(arguments, fragment):
    outcome = await call(clock_registry(), arguments.pop("tool"), **arguments)
    assert outcome.is_error and outcome.error_code == ToolErrorCode.INVALID_ARGUMENTS
    assert fragment in outcome.content


# --- calculator ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, value",
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("-2 ** 2", -4),
        ("(-2) ** 3", -8),
        ("7 // 2 + 7 % 2", 4),
        ("7 / 2", 3.5),
        ("2 ** 100", 2**100),
        ("2 ** -1", 0.5),
        ("sqrt(16) + abs(-3) + max(1, 5, 2)", 12.0),
        ("round(pi, 3)", 3.142),
        ("log(e)", 1.0),
        ("factorial(10)", 3628800),
        ("+5 - -5", 10),
        ("0.1 + 0.2", 0.30000000000000004),
    ],
)
def test_calculate(expression, value):
    assert calculate(expression) == value


@pytest.mark.parametrize(
    "expression, fragment",
    [
        ("__import__('os')", "not allowed"),
        ("__import__('os').system('true')", "not allowed"),
        ("().__class__.__bases__", "not allowed"),
        ("open('/etc/passwd')", "not allowed"),
        ("x + 1", "not allowed"),
        ("'a' * 3", "not allowed"),
        ("[n for n in range(10)]", "not allowed"),
        ("lambda: 1", "not allowed"),
        ("sqrt(x=4)", "not allowed"),
        ("True + 1", "booleans"),
        ("1j * 1j", "not allowed"),
        ("9 ** 9 ** 9", "exceed"),
        ("2 ** 100000", "exceed"),
        ("(10 ** 3000) * (10 ** 3000)", "exceed"),
        ("10.0 ** 400", "cannot compute"),
        ("exp(1000)", "cannot compute"),
        ("factorial(100000)", "factorial"),
        ("sqrt(-1)", "cannot compute"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("1 +", "not an arithmetic expression"),
        ("1" + " + 1" * 200, "longer than"),
    ],
)
def test_calculate_rejects_unsafe_or_unbounded_expressions(expression, fragment):
    with pytest.raises(CalculationError, match=fragment):
        calculate(expression)


async def test_the_calculate_tool_reports_results_and_failures():
    registry = ToolRegistry(plugins=[calculator.create_plugin()], enabled_plugins=["calculator"])
    assert (await call(registry, "calculate", expression=" 6 * 7 ")).content == "6 * 7 = 42"
    refused = await call(registry, "calculate", expression="__import__('os')")
    assert refused.is_error and refused.error_code == ToolErrorCode.TOOL_FAILED
    assert "not allowed" in refused.content


# --- switching plugins ---------------------------------------------------------------------------


def test_the_catalog_ships_calculator_and_clock_read_only():
    plugins = available_plugins()
    assert [plugin.name for plugin in plugins] == ["calculator", "clock"]
    assert all(tool.read_only for plugin in plugins for tool in plugin.tools)


def test_enabling_and_disabling_changes_definitions_and_notifies():
    registry = ToolRegistry(plugins=available_plugins(), enabled_plugins=["clock"])
    notices: list[list[str]] = []
    registry.on_change(lambda definitions: notices.append([d.name for d in definitions]))
    assert [d.name for d in registry.definitions()] == ["current_time", "convert_time"]

    registry.enable_plugin("calculator")
    registry.disable_plugin("clock")
    assert notices == [["current_time", "convert_time", "calculate"], ["calculate"]]
    assert {state.name: state.enabled for state in registry.plugins()} == {"clock": False, "calculator": True}
    assert {state.name: state.title for state in registry.plugins()} == {"clock": "Clock", "calculator": "Calculator"}
