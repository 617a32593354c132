"""Charts drawn on the server as inline SVG: no script, no asset from anywhere, readable without JavaScript.

Colours come from the page's stylesheet (the `series-<n>` classes), so a chart follows its theme.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 720, 170
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 20, 22
Scale = Callable[[float], float]


@dataclass
class Series:
    name: str
    values: Sequence[float | None]
    style: str = 'series-0'  # the stylesheet class: its colour
    bars: bool = False  # drawn as bars (stacked on the bar series before it) rather than a line


def nice_ceiling(value: float) -> float:
    """The smallest of 1, 2, 2.5, 5 x 10^k at or above `value` (1 for nothing)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return float(step * power)
    return float(10 * power)


def number(value: float) -> str:
    """A short label: 1.2k, 35, 0.25."""
    if value >= 1000:
        return f'{value / 1000:.3g}k'
    if value >= 10 or value == int(value):
        return f'{value:.0f}'
    return f'{value:.2g}'


def chart(
    series: Sequence[Series],
    labels: Sequence[tuple[int, str]],
    unit: str,
    title: str,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Markup:
    """A chart of equally spaced points (a bin each); `labels`: (index, text) under the x axis."""
    count = max((len(s.values) for s in series), default=0)
    if count == 0:
        return Markup(f'<p class="empty">{escape(title)}: no points yet</p>')
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    stacked = _stack([s for s in series if s.bars], count)
    peak = max(
        [v for s in series if not s.bars for v in s.values if v is not None] + [max(stacked, default=0.0)], default=0
    )
    top = nice_ceiling(peak)
    step = plot_w / count

    def x(index: float) -> float:
        return LEFT + step * (index + 0.5)

    def y(value: float) -> float:
        return TOP + plot_h * (1 - min(value, top) / top)

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{escape(title)}" preserveAspectRatio="xMidYMid meet">',
        f'<title>{escape(title)}</title>',
    ]
    for tick in range(5):
        value = top * tick / 4
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}"/>')
        parts.append(
            f'<text class="axis" x="{LEFT - 4}" y="{y(value) + 4:.1f}" text-anchor="end">{number(value)}</text>'
        )
    parts.append(f'<text class="axis unit" x="2" y="{TOP - 8}">{escape(unit)}</text>')
    for index, text in labels:
        parts.append(
            f'<text class="axis" x="{x(index):.1f}" y="{height - 6}" text-anchor="middle">{escape(text)}</text>'
        )
    base = [0.0] * count
    for s in series:
        if s.bars:
            parts += _bars(s, base, x, y, step)
    for s in series:
        if not s.bars:
            parts += _line(s, x, y)
    parts.append('</svg>')
    legend = ''.join(
        f'<span class="legend-item"><i class="swatch {escape(s.style)}"></i>{escape(s.name)}</span>' for s in series
    )
    return Markup(f'<figure class="chart-box">{"".join(parts)}<figcaption>{legend}</figcaption></figure>')


def _stack(bars: Sequence[Series], count: int) -> list[float]:
    return [sum((s.values[i] or 0.0) for s in bars if i < len(s.values)) for i in range(count)]


def _bars(s: Series, base: list[float], x: Scale, y: Scale, step: float) -> list[str]:
    out = []
    for index, value in enumerate(s.values):
        if not value:
            continue
        bottom, top_value = base[index], base[index] + value
        base[index] = top_value
        y_top, y_bottom = y(top_value), y(bottom)
        width = max(step * 0.8, 1.0)
        out.append(
            f'<rect class="{escape(s.style)}" x="{x(index) - width / 2:.1f}" y="{y_top:.1f}" '
            f'width="{width:.1f}" height="{max(y_bottom - y_top, 0.5):.1f}"><title>{escape(s.name)}: '
            f'{number(value)}</title></rect>'
        )
    return out


def _line(s: Series, x: Scale, y: Scale) -> list[str]:
    """A polyline per run of known values (a gap where the history has none)."""
    out: list[str] = []
    run: list[tuple[float, float]] = []
    for index, value in enumerate([*s.values, None]):
        if value is None:
            if len(run) == 1:
                px, py = run[0]
                out.append(f'<circle class="{escape(s.style)} dot" cx="{px:.1f}" cy="{py:.1f}" r="2"/>')
            elif run:
                points = ' '.join(f'{px:.1f},{py:.1f}' for px, py in run)
                out.append(f'<polyline class="{escape(s.style)} line" points="{points}"/>')
            run = []
        else:
            run.append((x(index), y(value)))
    return out


def sparkline(values: Sequence[float | None], style: str = 'series-0', width: int = 120, height: int = 24) -> Markup:
    """A small line for a table cell (None: a gap)."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return Markup('<span class="muted">–</span>')
    top = max(known) or 1.0
    step = width / max(len(values) - 1, 1)
    points = ' '.join(
        f'{i * step:.1f},{height - 2 - (height - 4) * v / top:.1f}' for i, v in enumerate(values) if v is not None
    )
    return Markup(
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" aria-hidden="true">'
        f'<polyline class="{escape(style)} line" points="{points}"/></svg>'
    )
