"""What the commands print besides their results: one-line errors and warnings on stderr, and the
aligned tables of `sessions` and `routes`."""

from __future__ import annotations

import sys

from app.i18n import _
from app.terminal import BOLD, DIM, colour_enabled, paint, print_error, print_warning

TYPE_CHECKING = False
if TYPE_CHECKING:
    from app.session.session import Session


def fail(message: str, code: int) -> int:
    """Say what went wrong in one line and give the exit code."""
    print_error(message)
    return code


def warn_if_torn(session: Session) -> None:
    """A torn last line (left by a crash) is skipped, not an error: say so on stderr."""
    if session.torn is not None:
        print_warning(
            _("{path}: the last line is incomplete (left by a crash) and was not read").format(
                path=session.path
            )
        )


def table(
    headings: list[str], rows: list[list[str]], right_aligned: tuple[bool, ...], dimmed: list[bool]
) -> str:
    """Aligned columns (wide characters counted as two cells), the heading bold on a terminal."""
    measured = [[_width(cell) for cell in row] for row in [headings, *rows]]
    widths = [max(column) for column in zip(*measured)]

    def line(cells: list[str], cell_widths: list[int]) -> str:
        padded = []
        for cell, cell_width, width, right in zip(cells, cell_widths, widths, right_aligned):
            gap = " " * (width - cell_width)
            padded.append(gap + cell if right else cell + gap)
        return "  ".join(padded).rstrip()

    colour = colour_enabled(sys.stdout)
    out = [paint(line(headings, measured[0]), BOLD, colour)]
    for row, row_widths, dim in zip(rows, measured[1:], dimmed):
        out.append(paint(line(row, row_widths), DIM, colour and dim))
    return "\n".join(out) + "\n"


def _width(text: str) -> int:
    """Terminal cells: wide (CJK) characters take two."""
    if text.isascii():
        return len(text)
    import re
    import unicodedata

    others = re.sub(r"[\x00-\x7f]+", "", text)
    return len(text) + sum(unicodedata.east_asian_width(char) in "WF" for char in others)
