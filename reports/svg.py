"""Inline SVG chart primitives: a time frame, axes, paths, bands, and downsampling.

Charts are generated on the server as plain SVG text: deterministic, tiny, testable by parsing,
and they render in any browser from disk without a charting library. Every text or attribute value
passes through `esc` (run data is untrusted). Hover text is carried in `data-tip` attributes, which
the page's script shows as a tooltip, and in `<title>` for browsers without scripts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 1100
LEFT = 124
RIGHT = 16
NS = 1_000_000_000


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def attrs(**values: object) -> str:
    """Render keyword arguments as escaped attributes; `data_x` becomes `data-x`, None is dropped."""
    return "".join(
        f' {k.rstrip("_").replace("_", "-")}="{esc(v)}"' for k, v in values.items() if v is not None
    )


def fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Frame:
    """Plot area of one chart on the shared time axis [0, end_ns]."""

    end_ns: int
    height: int
    top: int = 8
    bottom: int = 22

    @property
    def plot_width(self) -> float:
        return WIDTH - LEFT - RIGHT

    @property
    def y0(self) -> float:
        return self.height - self.bottom

    def x(self, t_ns: float) -> float:
        return LEFT + self.plot_width * min(max(t_ns, 0.0), self.end_ns) / self.end_ns

    def x_s(self, t_s: float) -> float:
        return self.x(t_s * NS)


def open_svg(frame: Frame, cls: str, label: str) -> str:
    return (
        f'<svg class="chart {esc(cls)}" viewBox="0 0 {WIDTH} {frame.height}"'
        f' width="{WIDTH}" height="{frame.height}" role="img"'
        f"{attrs(aria_label=label, data_end_ns=frame.end_ns)}"
        f' data-left="{LEFT}" data-plot-width="{fmt(frame.plot_width)}">'
    )


def clock(t_s: float) -> str:
    t = int(t_s)
    return f"{t // 3600}:{t // 60 % 60:02d}:{t % 60:02d}" if t >= 3600 else f"{t // 60}:{t % 60:02d}"


def nice_step(span: float, target: int) -> float:
    raw = span / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    return next((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), 10 * mag)


def time_axis(frame: Frame) -> str:
    span_s = frame.end_ns / NS
    step = nice_step(span_s, 12)
    if step >= 60:
        step = next((s for s in (60, 120, 300, 600, 900, 1800, 3600, 7200) if s >= step), step)
    out = [f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{frame.y0}" y2="{frame.y0}"/>']
    t = 0.0
    while t <= span_s + 1e-9:
        x = fmt(frame.x_s(t))
        out.append(f'<line class="grid" x1="{x}" x2="{x}" y1="{frame.top}" y2="{frame.y0}"/>')
        out.append(f'<text class="tick" x="{x}" y="{frame.y0 + 15}" text-anchor="middle">{clock(t)}</text>')
        t += step
    return "".join(out)


def linear_scale(frame: Frame, vmax: float, unit: str = "") -> tuple[str, float]:
    """A y axis from 0 to a nice value >= vmax; returns (svg, top value)."""
    step = nice_step(vmax if vmax > 0 else 1, 4)
    top = step * max(1, math.ceil(vmax / step)) if vmax > 0 else step
    out = []
    v = 0.0
    while v <= top + 1e-9:
        y = fmt(frame.y0 - (frame.y0 - frame.top) * v / top)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"/>')
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y}" dy="4" text-anchor="end">{fmt_num(v)}{unit}</text>'
        )
        v += step
    return "".join(out), top


def log_scale(frame: Frame, vmin: float, vmax: float, unit: str = "") -> tuple[str, float, float]:
    """A log10 y axis covering [vmin, vmax] in whole decades; returns (svg, low exponent, high exponent)."""
    lo = math.floor(math.log10(max(vmin, 1e-3)))
    hi = max(math.ceil(math.log10(max(vmax, 1e-3))), lo + 1)
    out = []
    for e in range(lo, hi + 1):
        y = fmt(frame.y0 - (frame.y0 - frame.top) * (e - lo) / (hi - lo))
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"/>')
        out.append(
            f'<text class="tick" x="{LEFT - 6}" y="{y}" dy="4" text-anchor="end">'
            f"{fmt_num(10.0**e)}{unit}</text>"
        )
    return "".join(out), float(lo), float(hi)


def fmt_num(v: float) -> str:
    if v >= 1_000_000:
        return f"{fmt(v / 1_000_000)}M"
    if v >= 1000:
        return f"{fmt(v / 1000)}k"
    return fmt(v) if v >= 1 or v == 0 else f"{v:g}"


def path(points: Iterable[tuple[float, float | None]], cls: str, **extra: object) -> str:
    """A line through (x, y) points; a None y breaks the line (no data there)."""
    parts: list[str] = []
    pen_down = False
    for x, y in points:
        if y is None:
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{fmt(x)} {fmt(y)}")
        pen_down = True
    return f'<path class="{esc(cls)}" d="{"".join(parts)}"{attrs(**extra)}/>' if parts else ""


def minmax_downsample(values: Sequence[float | None], buckets: int) -> list[tuple[float, float | None]]:
    """Reduce a dense per-second series to at most 2 points per bucket, keeping each bucket's
    minimum and maximum in time order, so spikes and drops survive. Returns (index, value) pairs."""
    n = len(values)
    if n <= 2 * buckets:
        return [(float(i), v) for i, v in enumerate(values)]
    out: list[tuple[float, float | None]] = []
    for b in range(buckets):
        lo, hi = b * n // buckets, (b + 1) * n // buckets
        chunk = [(i, values[i]) for i in range(lo, hi) if values[i] is not None]
        if not chunk:
            out.append((float(lo), None))
            continue
        i_min = min(chunk, key=lambda p: p[1] or 0.0)
        i_max = max(chunk, key=lambda p: p[1] or 0.0)
        for i, v in sorted({i_min, i_max}):
            out.append((float(i), v))
    return out


def rect(
    x0: float, x1: float, y0: float, y1: float, cls: str, tip: str | None = None, **extra: object
) -> str:
    w = max(x1 - x0, 0.8)
    title = f"<title>{esc(tip)}</title>" if tip else ""
    return (
        f'<rect class="{esc(cls)}" x="{fmt(x0)}" y="{fmt(y0)}" width="{fmt(w)}" height="{fmt(y1 - y0)}"'
        f"{attrs(data_tip=tip, **extra)}>{title}</rect>"
    )


def label(x: float, y: float, text: str, cls: str = "lbl", anchor: str = "start") -> str:
    return f'<text class="{esc(cls)}" x="{fmt(x)}" y="{fmt(y)}" text-anchor="{anchor}">{esc(text)}</text>'
