"""What keeping wide characters whole costs a frame (`app/ui/wide_cells.py`, issue 24 item 9).

The chat at 120×40 in Chinese, after a reply, with the help over the trajectory (the screen where
characters went missing): full frames and partial updates (every widget repainted) rendered to the
terminal's bytes, with the compositor's methods as `wide_cells` installs them against Textual's own,
alternating, the least of `--rounds` repetitions each. Goal: ≤ 1.1× Textual's.

    .venv/bin/python benchmarks/bench_wide_cells.py [--frames N] [--rounds N]

Exits 1 when the goal does not hold.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual._compositor import Compositor  # noqa: E402

from app.ui import wide_cells  # noqa: E402

GOAL = 1.1
TEXTUALS = (Compositor._render_chops, Compositor.render_partial_update)
OURS = (wide_cells._render_chops, wide_cells._render_partial_update)


def use(methods: tuple[object, object]) -> None:
    Compositor._render_chops, Compositor.render_partial_update = methods  # type: ignore[method-assign]


def frames(app, count: int) -> float:
    """Seconds to render `count` full frames and `count` partial updates of every widget."""
    compositor = app.screen._compositor
    widgets = set(compositor.visible_widgets)
    start = time.perf_counter()
    for _ in range(count):
        compositor.render_update(full=True).render_segments(app.console)
        for widget in widgets:
            widget.refresh()
        compositor.update_widgets(widgets)
        update = compositor.render_update()
        if update is not None:
            update.render_segments(app.console)
    return time.perf_counter() - start


async def measure(count: int, rounds: int) -> tuple[float, float]:
    from app import i18n
    from app.agent.runtime import catalog_from
    from app.ui.app import ChatOptions, ToolscopeApp

    i18n.set_language("zh_CN")
    os.environ["TOOLSCOPE_HOME"] = tempfile.mkdtemp()
    app = ToolscopeApp(ChatOptions(catalog=catalog_from(None), route_id="offline/demo", cwd=Path(tempfile.mkdtemp())))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        while app.registry is None:
            await pilot.pause(0.05)
        app.chat.composer.load_text("hello")
        await pilot.press("enter")
        while app._turn is None or app.turn_running:
            await pilot.pause(0.05)
        app.action_help()
        await pilot.press("ctrl+l")
        await pilot.pause(0.5)
        theirs, ours = [], []
        for _ in range(rounds):
            use(TEXTUALS)
            theirs.append(frames(app, count))
            use(OURS)
            ours.append(frames(app, count))
    return min(theirs), min(ours)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    theirs, ours = asyncio.run(measure(args.frames, args.rounds))
    ratio = ours / theirs
    print(f"{args.frames} full frames + {args.frames} partial updates, least of {args.rounds}:")
    print(f"  Textual's compositor  {theirs * 1000:.1f} ms")
    print(f"  wide_cells            {ours * 1000:.1f} ms")
    print(f"  ratio                 {ratio:.2f}  (goal ≤ {GOAL})")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
