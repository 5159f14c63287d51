"""The `clock` plugin: the current time in an IANA time zone, and conversion between zones."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, time
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.i18n import N_
from app.tools.source_state import Plugin
from app.tools.tool import Tool, ToolContext, ToolErrorCode, ToolFailure


def create_plugin(now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> Plugin:
    """`now` returns an aware datetime; tests pass a fixed one."""
    clock = _Clock(now)
    return Plugin(
        name="clock",
        title=N_("Clock"),
        description=N_("Current time in any time zone, and conversion between zones."),
        tools=(
            Tool(
                "current_time",
                "Get the current date and time in an IANA time zone (e.g. 'Europe/Paris').",
                {
                    "type": "object",
                    "properties": {
                        "timezone": {
                            "type": "string",
                            "description": "IANA zone name; defaults to 'UTC'.",
                        }
                    },
                    "additionalProperties": False,
                },
                clock.current_time,
                read_only=True,
            ),
            Tool(
                "convert_time",
                "Convert a local date and time from one IANA time zone to another. `time` is "
                "'YYYY-MM-DDTHH:MM[:SS]', or 'HH:MM[:SS]' for today in the source zone.",
                {
                    "type": "object",
                    "properties": {
                        "time": {
                            "type": "string",
                            "description": "Local time in the source zone, without an offset.",
                        },
                        "from_timezone": {"type": "string", "description": "IANA zone of `time`."},
                        "to_timezone": {"type": "string", "description": "IANA zone to convert to."},
                    },
                    "required": ["time", "from_timezone", "to_timezone"],
                    "additionalProperties": False,
                },
                clock.convert_time,
                read_only=True,
            ),
        ),
    )


class _Clock:
    def __init__(self, now: Callable[[], datetime]) -> None:
        self.now = now

    async def current_time(self, arguments: dict[str, Any], context: ToolContext) -> str:
        zone = _zone(arguments.get("timezone", "UTC"))
        return _describe(self.now().astimezone(zone))

    async def convert_time(self, arguments: dict[str, Any], context: ToolContext) -> str:
        source = _zone(arguments["from_timezone"])
        target = _zone(arguments["to_timezone"])
        naive = self._parse_local(arguments["time"], source)
        local = naive.replace(tzinfo=source)
        if local.astimezone(UTC).astimezone(source).replace(tzinfo=None) != naive:
            raise ToolFailure(
                ToolErrorCode.TOOL_FAILED,
                f"{naive.isoformat()} does not exist in {source.key} (the clocks skip it)",
            )
        converted = f"{_describe(local)} = {_describe(local.astimezone(target))}"
        if local.replace(fold=1).utcoffset() != local.utcoffset():
            converted += (
                f"\n(note: {naive.isoformat()} occurs twice in {source.key}; the earlier one is used)"
            )
        return converted

    def _parse_local(self, text: str, zone: ZoneInfo) -> datetime:
        try:
            if "T" in text or " " in text.strip():
                parsed = datetime.fromisoformat(text.strip())
            else:
                today = self.now().astimezone(zone).date()
                parsed = datetime.combine(today, time.fromisoformat(text.strip()))
        except ValueError:
            raise ToolFailure(
                ToolErrorCode.INVALID_ARGUMENTS,
                f"cannot read {text!r} as 'YYYY-MM-DDTHH:MM[:SS]' or 'HH:MM[:SS]'",
            ) from None
        if parsed.tzinfo is not None:
            raise ToolFailure(
                ToolErrorCode.INVALID_ARGUMENTS,
                "give `time` without a UTC offset; the zone comes from `from_timezone`",
            )
        return parsed


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolFailure(ToolErrorCode.INVALID_ARGUMENTS, f"unknown time zone {name!r}") from None


def _describe(moment: datetime) -> str:
    zone = moment.tzinfo
    key = zone.key if isinstance(zone, ZoneInfo) else str(zone)
    return f"{moment.isoformat(timespec='seconds')} ({key}, {moment.tzname()}, {moment:%A})"
