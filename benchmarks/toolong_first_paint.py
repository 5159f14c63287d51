"""Toolong's first paint of a file's tail, headless: run with a Python that has `toolong` installed
(it pins textual<0.59, so its own venv), e.g. `/tmp/tlvenv/bin/python benchmarks/toolong_first_paint.py FILE`.

Prints the seconds from starting Toolong's app (imports done) until its log view is tailing — which
it does once its scan of the file's line breaks completes and it has scrolled to the last line —
and the screen has been refreshed once after that. Used by `bench_large.py --toolong PYTHON`.
"""

from __future__ import annotations

import asyncio
import sys
import time

from toolong.log_view import LogView
from toolong.ui import UI


async def first_paint(path: str) -> float:
    app = UI([path])
    started = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        while True:
            await pilot.pause(0.005)
            views = app.query(LogView)
            if views and views.first().tail:
                break
        await pilot.pause()
        return time.perf_counter() - started


if __name__ == "__main__":
    print(f"{asyncio.run(first_paint(sys.argv[1])):.4f}")
