"""How session facts are spelled for people, the same in every front end (the `sessions` table and
the TUI's session picker, the status line, `toolscope cost`): local times, sizes, token counts,
money, and why a file could not be read."""

from __future__ import annotations

import time
from decimal import Decimal

from app.i18n import _, ngettext
from app.session import listing


def local_time(milliseconds: int) -> str:
    """`YYYY-MM-DD HH:MM` in the local time zone, from ms since the epoch."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(milliseconds / 1000))


def local_date(milliseconds: int) -> str:
    """`YYYY-MM-DD` in the local time zone, from ms since the epoch."""
    return time.strftime("%Y-%m-%d", time.localtime(milliseconds / 1000))


def token_count(count: int) -> str:
    """`9876`, `12.3k`, `1.2M`: exact while short, three figures after."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    return f"{count / 1000:.1f}k" if count >= 10_000 else str(count)


def money(amount: Decimal) -> str:
    """US dollars with the cents a small amount needs: `$12.34`, `$0.0061`, `$0` (prices are USD)."""
    if not amount:
        return "$0"
    places = 2 if amount >= 1 else 4
    return f"${amount:,.{places}f}"


def human_size(size: int) -> str:
    if size < 1024:
        return ngettext("{count} byte", "{count} bytes", size).format(count=size)
    value, unit = size / 1024, "KiB"
    for larger in ("MiB", "GiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return _("{value:.1f} {unit}").format(value=value, unit=unit)


def session_problem_text(problem: str) -> str:
    """Why a listed file is not a readable session (`SessionSummary.problem`)."""
    reasons = {
        listing.EMPTY: _("(unreadable: empty file)"),
        listing.UNSUPPORTED_VERSION: _("(unreadable: unsupported format version)"),
        listing.INVALID_HEADER: _("(unreadable: not a session log)"),
    }
    return reasons[problem]
