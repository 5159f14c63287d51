"""Wide characters (Chinese, emoji) are drawn whole wherever a widget lies over others.

Textual's compositor cuts every screen line at the edges of every visible widget, covered or not,
and cuts each widget's line at all of them. A wide character that straddles such an edge is split
in two, and Rich draws each half as a space: the help over the trajectory's divider showed
`实时查看每次  求中各路由`, the footer's palette key over the keys it hides `命令  板` (Textual
issue 6357, open in 8.2.8). Which characters vanish depends on where the widgets underneath end,
so it did not happen on every run, and a redraw cut at the same places.

`install()` replaces two compositor methods: a widget's line is cut only where what is in front of
it changes (the pieces it shows whole, its other cuts kept as empty pieces so nothing behind claims
them), and a partial update that ends inside such a piece draws the piece to its end, since
overwriting half a wide character erases it on the terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.strip import Strip

_COVERED = Strip([], 0)
"""A cut inside a piece drawn whole: taken, so a widget behind does not draw there."""


def _render_chops(
    self: Compositor, crop: Region, is_rendered_line: Callable[[int], bool]
) -> Sequence[Mapping[int, Strip]]:
    """Textual's `Compositor._render_chops`, front to back, with a widget's line cut only where it
    goes from shown to covered."""
    cuts = self.cuts
    chops: list[dict[int, Strip | None]] = [dict.fromkeys(cut_set[:-1]) for cut_set in cuts]
    for region, clip, strips in self._get_renders(crop):
        render_region = region.intersection(clip)
        render_x = render_region.x
        first_cut, last_cut = render_region.column_span
        for y, strip in zip(render_region.line_range, strips):
            if not is_rendered_line(y):
                continue
            line = chops[y]
            edges = [cut for cut in cuts[y] if last_cut >= cut >= first_cut]
            shown = [line[cut] is None for cut in edges[:-1]]
            runs = _runs(shown)
            pieces = strip.divide([edges[end] - render_x for _start, end, _shown in runs])
            for (start, end, is_shown), piece in zip(runs, pieces):
                if is_shown:
                    line[edges[start]] = piece
                    for cut in edges[start + 1 : end]:
                        line[cut] = _COVERED
    return chops  # type: ignore[return-value]  # every cut is filled: the screen has a background


def _runs(flags: list[bool]) -> list[tuple[int, int, bool]]:
    """`flags` as (start, end, flag) runs of equal values."""
    runs = []
    start = 0
    for index in range(1, len(flags)):
        if flags[index] != flags[start]:
            runs.append((start, index, flags[start]))
            start = index
    runs.append((start, len(flags), flags[start]))
    return runs


def _render_partial_update(self: Compositor) -> ChopsUpdate | None:
    """Textual's `Compositor.render_partial_update`, where a piece ends where its cells end (past
    the cuts it covers) and a span ending inside a piece is drawn to the piece's end."""
    screen_region = self.size.region
    update_regions = self._dirty_regions.copy()
    self._dirty_regions.clear()
    if not update_regions:
        return None
    crop = Region.from_union(update_regions).intersection(screen_region)
    spans = list(self._regions_to_spans(update_regions))
    rendered = {y for y, _x1, _x2 in spans}
    chops = self._render_chops(crop, rendered.__contains__)
    chop_ends = [cut_set[1:] for cut_set in self.cuts]
    for y in rendered:
        chop_ends[y] = [
            end if strip is None else max(end, x + strip.cell_length)
            for end, (x, strip) in zip(chop_ends[y], chops[y].items())
        ]
    spans = [(y, x1, _piece_end(chops[y], chop_ends[y], x2)) for y, x1, x2 in spans]
    return ChopsUpdate(chops, spans, chop_ends)


def _piece_end(line: Mapping[int, Strip], ends: list[int], x2: int) -> int:
    """`x2`, or the end of the piece it falls inside."""
    for end, x in zip(ends, line):
        if x < x2 < end:
            return end
    return x2


def install() -> None:
    """Make every compositor keep wide characters whole (idempotent)."""
    Compositor._render_chops = _render_chops  # type: ignore[method-assign]
    Compositor.render_partial_update = _render_partial_update  # type: ignore[method-assign]
