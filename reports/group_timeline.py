"""The consumer groups' timelines, on the run's shared time axis: records processed per second by
each group, with its rebalances and its failed or unknown commits marked, and each group's commit
lag; the fault windows shaded on both.

A drop to zero is a group that stopped processing: a member frozen or dead with partitions not yet
moved, a rebalance, or a commit blocking the poll loop while the coordinator moves.
"""

from __future__ import annotations

from contract.checked_run import NS, GroupResult, Run
from reports import svg
from reports.svg import Frame
from reports.timeline import fault_bands

GROUP_COLOURS = 8  # css classes g0..g7
_POLLED_LABEL = "records processed per second by each consumer group"


def _line(group: GroupResult, seconds: int, lag: bool = False) -> list[float | None]:
    values: list[float | None] = [0.0] * seconds
    for second in group.series:
        if 0 <= second.t_s < seconds:
            values[second.t_s] = float(second.lag if lag else second.polled)
    return values


def _markers(group: GroupResult, index: int, frame: Frame) -> str:
    """A tick at each second with a rebalance, a red cross at each with failed or unknown commits."""
    out = []
    for second in group.series:
        x, when = frame.x_s(second.t_s + 0.5), svg.clock(second.t_s)
        data = svg.attrs(data_group=group.name, data_t_s=second.t_s)
        if second.assigns:
            tip = f"{group.name}: {second.assigns} assignment(s) at {when}, generation {second.generation}"
            tick = frame.top + 4 + 10 * index
            out.append(
                f'<g class="rebalance g{index % GROUP_COLOURS}"{data}><title>{svg.esc(tip)}</title>'
                f'<rect x="{svg.fmt(x - 2)}" y="{svg.fmt(tick)}" width="4" height="8"/></g>'
            )
        if second.commits_failed:
            tip = f"{group.name}: {second.commits_failed} commit(s) failed or unknown at {when}"
            left, right = svg.fmt(x - 4), svg.fmt(x + 4)
            low, high = svg.fmt(frame.y0 - 14), svg.fmt(frame.y0 - 6)
            out.append(
                f'<g class="commit-failed"{data}><title>{svg.esc(tip)}</title>'
                f'<path d="M{left} {low} L{right} {high} M{left} {high} L{right} {low}"/></g>'
            )
    return "".join(out)


def group_chart(run: Run) -> str:
    """Records processed per second, with rebalances and failed commits; '' without groups."""
    return _chart(run, lag=False)


def lag_chart(run: Run) -> str:
    """Each group's commit lag (records between its committed offsets and the log's end); ''
    without groups."""
    return _chart(run, lag=True)


def _chart(run: Run, lag: bool) -> str:
    groups = run.result.groups
    if not groups:
        return ""
    frame = Frame(run.end_ns, 160 if lag else 200, top=24 if lag else 24 + 10 * len(groups))
    seconds = max(1, -(-run.end_ns // NS))
    buckets = int(frame.plot_width / 2)
    lines = {g.name: svg.minmax_downsample(_line(g, seconds, lag), buckets) for g in groups}
    vmax = max((v or 0.0 for pts in lines.values() for _, v in pts), default=0.0)
    grid, top = svg.linear_scale(frame, vmax, "" if lag else "/s")
    series, label = ("lag", "commit lag of each consumer group") if lag else ("polled", _POLLED_LABEL)
    out = [svg.open_svg(frame, "group-lag" if lag else "groups", label), grid]
    out += [svg.time_axis(frame), fault_bands(run, frame)]
    x = svg.LEFT + 8
    for index, group in enumerate(groups):
        colour = f"g{index % GROUP_COLOURS}"
        xy = (
            (frame.x_s(i + 0.5), None if v is None else frame.y0 - (frame.y0 - frame.top) * v / top)
            for i, v in lines[group.name]
        )
        out.append(svg.path(xy, f"line {colour}", data_group=group.name, data_series=series))
        if not lag:
            out.append(_markers(group, index, frame))
        out.append(f'<rect class="{colour} swatch" x="{x}" y="10" width="14" height="4"/>')
        out.append(svg.label(x + 18, 15, f"{group.name} ({group.commit})", "legend"))
        x += 40 + 7 * (len(group.name) + len(group.commit))
    return "".join(out) + "</svg>"
