"""The run's timelines on one shared time axis: faults, throughput, ack latency, cluster state.

Every chart has the same width and plot area, so a moment is at the same x in all of them; fault
windows are shaded and labelled on each. Series are downsampled to the pixel grid (min/max per
column) and cluster state changes narrower than a pixel are merged into "churn", so a run of hours
and millions of events still renders as a page of a few hundred KB.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Callable

from contract.checked_run import NS, ClusterSample, Run
from contract.coordinators import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    group_offsets_partition,
)
from contract.events import FaultWindow
from contract.nodes import node_name
from reports import svg
from reports.svg import Frame

ACKS_ORDER = ("all", "1", "0")
MAX_FAULT_LANES = 6
MIN_SEGMENT_PX = 2.0

Segment = tuple[int, int, str, str, str]  # start_ns, end_ns, css class, label, tooltip
Value = tuple[str, str, str] | None  # css class, label, tooltip of one lane at one sample


def acks_modes(run: Run) -> list[str]:
    """The acks modes the run wrote under or declared a topic for (result.json counts every mode,
    with zeros for those it did not use)."""
    written = {mode for mode, counts in run.result.acks.items() if counts.get("attempted")}
    present = written | {r.acks for r in run.result.series} | {t.acks for t in run.info.topics}
    return [m for m in ACKS_ORDER if m in present] + sorted(present - set(ACKS_ORDER))


def fault_label(w: FaultWindow) -> str:
    return f"{w.fault} {', '.join(w.targets)}".strip()


def fault_tip(w: FaultWindow) -> str:
    stop = "never healed" if w.stop_ns is None else svg.clock(w.stop_ns / NS)
    lost = power_lost(w) or disk_failed(w)
    return f"{fault_label(w)}: {svg.clock(w.start_ns / NS)} to {stop}" + (f"; {lost}" if lost else "")


DISK_COUNTS = {
    "enospc": "write refused (ENOSPC)",
    "fsync_eio": "fsync failed (EIO)",
    "slow_fsync": "fsync delayed",
}


def disk_failed(w: FaultWindow) -> str:
    """What a disk fault failed or delayed on each disk (`FaultWindow.disk_counts`): `kafka-2: 1
    fsync failed (EIO)`; "" for other faults, or when nothing was failed or delayed."""
    said = [
        f"{node}: " + ", ".join(f"{n:,} {DISK_COUNTS.get(name, name)}" for name, n in sorted(counts.items()))
        for node, counts in sorted(w.disk_counts().items())
        if counts
    ]
    return "; ".join(said)


def power_lost(w: FaultWindow) -> str:
    """What a power loss's lossy disks dropped, per node (`detail.dropped`, HISTORY_FORMAT.md):
    `kafka-1 dropped 41,237 of 41,237 unsynced bytes in 3 files, undid 2 directory changes`; "" for
    any other fault."""
    dropped = w.detail.get("dropped")
    if not isinstance(dropped, dict):
        return ""
    said = []
    for node, disk in sorted(dropped.items()):
        if not isinstance(disk, dict):
            continue
        files = sum(
            1 for loss in (disk.get("files") or {}).values() if isinstance(loss, dict) and loss.get("dropped")
        )
        undone = len(disk.get("undone") or [])
        lost, unsynced = disk.get("dropped_bytes", 0), disk.get("unsynced_bytes", 0)
        text = f"{node} dropped {lost:,} of {unsynced:,} unsynced bytes"
        text += f" in {files} file{'s' if files != 1 else ''}" if files else ""
        text += f", undid {undone} directory change{'s' if undone != 1 else ''}" if undone else ""
        said.append(text)
    return "; ".join(said)


def fault_bands(run: Run, frame: Frame) -> str:
    return "".join(
        svg.rect(
            frame.x(w.start_ns),
            frame.x(w.stop_ns or run.end_ns),
            frame.top,
            frame.y0,
            "fault-band",
            fault_tip(w),
        )
        for w in run.faults
    )


def _assign_lanes(run: Run, frame: Frame) -> list[int]:
    lane_end: list[float] = []
    lanes = []
    for w in run.faults:
        x0 = frame.x(w.start_ns)
        free = [i for i, end in enumerate(lane_end) if end + 4 <= x0]
        if free:
            lane = free[0]
        elif len(lane_end) < MAX_FAULT_LANES:
            lane_end.append(0.0)
            lane = len(lane_end) - 1
        else:
            lane = min(range(len(lane_end)), key=lane_end.__getitem__)
        width_needed = 6.5 * len(fault_label(w)) + 8
        lane_end[lane] = max(lane_end[lane], frame.x(w.stop_ns or run.end_ns), x0 + min(width_needed, 160))
        lanes.append(lane)
    return lanes


def fault_strip(run: Run) -> str:
    """One bar per fault window, labelled with the fault and its targets, in non-overlapping lanes."""
    probe = Frame(run.end_ns, 100)
    lanes = _assign_lanes(run, probe)
    n_lanes = max(lanes, default=0) + 1
    frame = Frame(run.end_ns, 8 + 20 * n_lanes + 22)
    out = [svg.open_svg(frame, "faults", "fault windows"), svg.time_axis(frame)]
    next_start: dict[int, float] = {}  # per lane, where the following bar begins (labels stop there)
    limits = []
    for w, lane in zip(reversed(run.faults), reversed(lanes), strict=True):
        limits.append(next_start.get(lane, svg.WIDTH - svg.RIGHT))
        next_start[lane] = frame.x(w.start_ns)
    for w, lane, limit in zip(run.faults, lanes, reversed(limits), strict=True):
        x0, x1 = frame.x(w.start_ns), frame.x(w.stop_ns or run.end_ns)
        y = frame.top + 20 * lane
        out.append(
            svg.rect(
                x0,
                x1,
                y,
                y + 16,
                "fault-bar" + (" open" if w.stop_ns is None else ""),
                fault_tip(w),
                data_fault=w.fault,
                data_targets=",".join(w.targets),
                data_start_ns=w.start_ns,
                data_stop_ns="" if w.stop_ns is None else w.stop_ns,
            )
        )
        text = fault_label(w)
        room = int((limit - x0 - 4) / 6.5)
        if room >= 4:
            out.append(
                svg.label(x0 + 3, y + 12, text if len(text) <= room else text[: room - 1] + "…", "fault-lbl")
            )
    out.append(svg.label(6, frame.top + 12, "faults", "lane-lbl"))
    return "".join(out) + "</svg>"


def _dense(run: Run, acks: str, pick: Callable[..., float | None], fill: float | None) -> list[float | None]:
    seconds = max(1, -(-run.end_ns // NS))
    values: list[float | None] = [fill] * seconds
    for r in run.result.series:
        if r.acks == acks and 0 <= r.t_s < seconds:
            values[r.t_s] = pick(r)
    return values


def _legend(modes: list[str], extra: list[tuple[str, str]]) -> str:
    items = [(f"line acks-{m}", f"acks={m}") for m in modes] + extra
    x = svg.LEFT + 8
    out = []
    for cls, text in items:
        out.append(f'<rect class="{svg.esc(cls)} swatch" x="{x}" y="10" width="14" height="4"/>')
        out.append(svg.label(x + 18, 15, text, "legend"))
        x += 26 + 7 * len(text)
    return "".join(out)


def _anomaly_markers(run: Run, frame: Frame) -> str:
    """A marker at the second each lost / divergent write was acknowledged, merged per pixel column."""
    cols: dict[tuple[str, str, int], list[int]] = defaultdict(lambda: [0, 1 << 62, 0])
    for r in run.result.series:
        for kind, count in (("lost", r.lost), ("divergent", r.divergent)):
            if count:
                cell = cols[(kind, r.acks, int(frame.x_s(r.t_s + 0.5)))]
                cell[0] += count
                cell[1] = min(cell[1], r.t_s)
                cell[2] = max(cell[2], r.t_s)
    out = []
    for (kind, acks, px), (count, t0, t1) in sorted(cols.items()):
        when = svg.clock(t0) if t0 == t1 else f"{svg.clock(t0)}-{svg.clock(t1)}"
        tip = f"{count} {kind} write{'s' * (count != 1)} acknowledged at {when} (acks={acks})"
        y = frame.top + (0 if kind == "lost" else 9)
        out.append(
            f'<g class="marker {kind}"'
            f"{svg.attrs(data_kind=kind, data_acks=acks, data_count=count, data_t_s=t0, data_tip=tip)}>"
            f'<title>{svg.esc(tip)}</title><line x1="{px}" x2="{px}" y1="{y}" y2="{frame.y0}"/>'
            f'<path d="M{px - 5} {y} L{px + 5} {y} L{px} {y + 8}Z"/></g>'
        )
    return "".join(out)


def throughput_chart(run: Run) -> str:
    frame = Frame(run.end_ns, 230, top=24)
    modes = acks_modes(run)
    buckets = int(frame.plot_width / 2)
    series = {m: svg.minmax_downsample(_dense(run, m, lambda r: float(r.acked), 0.0), buckets) for m in modes}
    vmax = max((v or 0.0 for pts in series.values() for _, v in pts), default=0.0)
    grid, top = svg.linear_scale(frame, vmax, "/s")
    out = [svg.open_svg(frame, "throughput", "acknowledged writes per second"), grid, svg.time_axis(frame)]
    out.append(fault_bands(run, frame))
    for m, pts in series.items():
        xy = (
            (frame.x_s(i + 0.5), None if v is None else frame.y0 - (frame.y0 - frame.top) * v / top)
            for i, v in pts
        )
        out.append(svg.path(xy, f"line acks-{m}", data_acks=m))
    out.append(_anomaly_markers(run, frame))
    out.append(
        _legend(modes, [("marker-swatch lost", "lost write"), ("marker-swatch divergent", "divergent write")])
    )
    return "".join(out) + "</svg>"


def latency_chart(run: Run) -> str:
    frame = Frame(run.end_ns, 230, top=24)
    modes = [
        m for m in acks_modes(run) if any(r.acks == m and r.p99_ms is not None for r in run.result.series)
    ]
    buckets = int(frame.plot_width / 2)
    lines = {
        (m, q): svg.minmax_downsample(_dense(run, m, lambda r, q=q: getattr(r, f"{q}_ms"), None), buckets)
        for m in modes
        for q in ("p99", "p50")
    }
    values = [v for pts in lines.values() for _, v in pts if v is not None and v > 0]
    grid, lo, hi = svg.log_scale(frame, min(values, default=1.0), max(values, default=10.0), " ms")
    out = [svg.open_svg(frame, "latency", "acknowledgement latency"), grid, svg.time_axis(frame)]
    out.append(fault_bands(run, frame))
    span = frame.y0 - frame.top

    def y(v: float | None) -> float | None:
        return None if v is None or v <= 0 else frame.y0 - span * (math.log10(v) - lo) / (hi - lo)

    for (m, q), pts in lines.items():
        out.append(svg.path(((frame.x_s(i + 0.5), y(v)) for i, v in pts), f"line acks-{m} {q}", data_acks=m))
    out.append(_legend(modes, [("line p50 swatch-dash", "dashed: p50, solid: p99")]))
    return "".join(out) + "</svg>"


def _segments(samples: tuple[ClusterSample, ...], value: Callable[[ClusterSample], Value]) -> list[Segment]:
    segs: list[Segment] = []
    for s, nxt in itertools.pairwise(samples):
        v = value(s)
        if v is None:
            continue
        if segs and segs[-1][1] == s.time_ns and segs[-1][2:] == v:
            segs[-1] = (segs[-1][0], nxt.time_ns, *v)
        else:
            segs.append((s.time_ns, nxt.time_ns, *v))
    return segs


def _lane(segs: list[Segment], frame: Frame, y: float, h: float) -> str:
    """Draw one lane; runs of segments too narrow to see become one hatched 'churn' segment."""
    out: list[str] = []
    pending: list[Segment] = []

    def flush() -> None:
        if len(pending) == 1:
            draw(pending[0])
        elif pending:
            t0, t1 = pending[0][0], pending[-1][1]
            tip = f"{len(pending)} changes between {svg.clock(t0 / NS)} and {svg.clock(t1 / NS)}"
            draw((t0, t1, "churn", "", tip))
        pending.clear()

    def draw(seg: Segment) -> None:
        x0, x1 = frame.x(seg[0]), frame.x(seg[1])
        out.append(svg.rect(x0, x1, y, y + h, seg[2], seg[4]))
        if seg[3] and x1 - x0 > 7 * len(seg[3]) + 4:
            out.append(svg.label(x0 + 3, y + h - 3, seg[3], "seg-lbl"))

    for seg in segs:
        if frame.x(seg[1]) - frame.x(seg[0]) >= MIN_SEGMENT_PX:
            flush()
            draw(seg)
        else:
            pending.append(seg)
            if frame.x(pending[-1][1]) - frame.x(pending[0][0]) >= MIN_SEGMENT_PX:
                flush()
    flush()
    return "".join(out)


def _controller(s: ClusterSample) -> Value:
    if s.controller is None:
        return None
    return (f"b{s.controller % 8}", str(s.controller), f"controller: {node_name(s.controller)}")


def _broker(b: int) -> Callable[[ClusterSample], Value]:
    def value(s: ClusterSample) -> Value:
        if b in s.live_brokers:
            return ("alive", "", f"broker {b} registered (ZooKeeper) or unfenced (KRaft)")
        return ("down", "", f"broker {b} not registered (down or session expired)")

    return value


def _leader(k: tuple[str, int]) -> Callable[[ClusterSample], Value]:
    def value(s: ClusterSample) -> Value:
        p = s.partitions.get(k)
        if p is None:
            return None
        if p.leader is None or p.leader < 0:
            return ("noleader", "none", f"{k[0]}/{k[1]}: no leader (offline)")
        tip = f"{k[0]}/{k[1]}: leader broker {p.leader}, leader epoch {p.leader_epoch}"
        return (f"b{p.leader % 8}", f"{p.leader} e{p.leader_epoch}", tip)

    return value


def _isr(k: tuple[str, int], full: int, need: int) -> Callable[[ClusterSample], Value]:
    def value(s: ClusterSample) -> Value:
        p = s.partitions.get(k)
        if p is None:
            return None
        n = len(p.isr)
        cls = "isr-full" if n >= full else "isr-short" if n >= need else "isr-under"
        return (cls, "", f"{k[0]}/{k[1]}: ISR {list(p.isr)} ({n} of {full}; min.insync.replicas {need})")

    return value


def _partition_lanes(run: Run) -> list[tuple[tuple[str, int], str]]:
    """The sampled partitions to draw, with their lane names: the workload's, and of the internal
    topics only the partitions whose leaders coordinate a consumer group ("g-alo coordinator") or a
    transactional.id ("kchaos-tx-0 coordinator")."""
    sampled = sorted({k for s in run.cluster for k in s.partitions})
    offsets = [p for t, p in sampled if t == OFFSETS_TOPIC]
    txn_state = [p for t, p in sampled if t == TRANSACTION_STATE_TOPIC]
    lanes = [(k, f"{k[0]}/{k[1]}") for k in sampled if k[0] not in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)]
    if offsets:  # the offsets topic was sampled: a run with groups
        for group in run.result.groups:
            partition = group_offsets_partition(group.name, run.info.offsets_partitions, offsets)
            if partition is not None:
                lanes.append(((OFFSETS_TOPIC, partition), f"{group.name} coordinator"))
    if txn_state:  # the transaction log was sampled (every partition): a run with transactions
        for t in run.result.transactions or ():
            declared = run.info.transaction_state_partitions
            partition = group_offsets_partition(t.transactional_id, declared, txn_state)
            if partition is not None:
                lanes.append(((TRANSACTION_STATE_TOPIC, partition), f"{t.transactional_id} coordinator"))
    return lanes


def cluster_chart(run: Run) -> str:
    """Controller, broker liveness, and per partition the leader (with epoch) and ISR size."""
    samples = run.cluster
    brokers = sorted(
        {b for s in samples for b in s.live_brokers}
        | {b for s in samples for p in s.partitions.values() for b in p.isr}
        | {p.leader for s in samples for p in s.partitions.values() if p.leader is not None and p.leader >= 0}
    )
    topics = {t.name: t for t in run.info.topics}
    default_min_isr = run.info.broker_config.get("min.insync.replicas", "1")
    rows: list[tuple[str, float, list[Segment]]] = [("controller", 16, _segments(samples, _controller))]
    rows += [(f"broker {b}", 10, _segments(samples, _broker(b))) for b in brokers]
    for k, name in _partition_lanes(run):
        topic = topics.get(k[0])
        full = (topic.replication_factor if topic else None) or len(brokers)
        need = int((topic.config if topic else {}).get("min.insync.replicas", default_min_isr))
        rows.append((name, 14, _segments(samples, _leader(k))))
        rows.append(("ISR", 6, _segments(samples, _isr(k, full, need))))
    height = 8 + int(sum(h + 4 for _, h, _ in rows)) + 22
    frame = Frame(run.end_ns, height)
    out = [svg.open_svg(frame, "cluster", "cluster state"), svg.time_axis(frame), fault_bands(run, frame)]
    y = float(frame.top)
    for name, h, segs in rows:
        out.append(f'<g class="lane"{svg.attrs(data_lane=name)}>')
        out.append(
            svg.label(
                svg.LEFT - 6, y + h - 2, name if len(name) <= 20 else "…" + name[-19:], "lane-lbl", "end"
            )
        )
        out.append(_lane(segs, frame, y, h) + "</g>")
        y += h + 4
    return "".join(out) + "</svg>"
