"""Drawing a :class:`~tools.timeline.model.Timeline` with matplotlib (Agg backend: headless).

Two panels share the time axis (x = timestamp, ms):

- **records** (top): a lane per input topic partition with each input at its timestamp, the
  aggregation windows (bar = window, thin line = grace, tick = close point) when the topology
  keeps windows, and a lane per output topic partition; a grey arrow runs from each output back
  to the input whose processing emitted it; drops are red crosses with their reason code (an
  input whose close check found its window expired, ``unemitted_window``, is not one: that
  window is drawn red, "never emitted"). A
  topology graph also has a lane per internal topic (repartition, foreign-key subscription and
  response topics, grey) between the inputs and the windows, each record there joined to its
  input by a dotted line.
- **processing order** (bottom): one row per processed input, top to bottom, named by its
  record (``left k:A@3``); each input's dot at its timestamp, its join window (bar) and grace
  (thin line up to the close tick) on its row, the outputs it emitted (diamonds), the internal
  records it caused (small grey squares), and one step line per task: the task's stream time
  after each row. A close tick is the first stream time at which the window is closed (the
  model's ``CloseRule``, whose words the legend shows): where a stream-time line reaches it, that
  window is closed.

Labels never overprint: each is placed where its measured extent (the renderer's) overlaps no
text placed before it, trying a few staggered offsets, else left out (:func:`place_labels`);
labels are cut at token boundaries (``model.cut_label``), and the HTML page carries every
label's and every record's full text as a hover title. The figure grows with the number of
lanes and records, so 5 to 200 records stay readable. The same timeline gives byte-identical
SVG and HTML (the SVG ids are salted with a constant, not a random one).
"""
from __future__ import annotations

import html
import io
import re
import textwrap
from typing import Dict, List, Optional, Sequence, Tuple

import attrs
import matplotlib

matplotlib.use("Agg")  # headless: never open a window, whatever the environment says

from matplotlib import pyplot as plt  # noqa: E402 - after choosing the backend
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.text import Annotation, Text  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

from kssim.reference.model.render import show  # noqa: E402
from kssim.tools.timeline.model import (IntervalKind, LaneKind, MarkKind, RecordMark, Timeline,  # noqa: E402
                                        cut_label)

#: marker per kind of record: tombstones and null keys must not look like values
MARKERS = {MarkKind.VALUE: "o", MarkKind.NULL_VALUE: "s", MarkKind.NULL_KEY: "^"}
MARK_NAMES = {MarkKind.VALUE: "record", MarkKind.NULL_VALUE: "null value (tombstone)", MarkKind.NULL_KEY: "null key"}
TOPIC_COLOURS = {"left": "tab:blue", "right": "tab:orange", "input": "tab:blue"}
#: the input topics of a graph (any names), in the order of their lanes
SOURCE_COLOURS = ("tab:blue", "tab:orange", "tab:cyan", "tab:olive", "tab:purple", "tab:brown", "tab:pink")
INTERNAL_COLOUR = "tab:gray"
OUTPUT_COLOUR = "tab:green"
DROP_COLOUR = "tab:red"
TASK_COLOURS = ("black", "tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
LABEL_SIZE = 7
#: a label's width, in inches per character at LABEL_SIZE (for the margins)
CHAR_WIDTH_IN = 0.058
#: the SVG ids' salt: matplotlib's default is random, and the same timeline must give the same bytes
SVG_SALT = "kssim-timeline"
#: a window's label and a failure's message are cut to these many characters; legend lines wrap
WINDOW_LABEL_CHARS, FAILURE_CHARS, LEGEND_CHARS = 28, 80, 32
#: room kept around a label (pixels): two labels never touch
LABEL_PAD_PX = 1.0
#: most links drawn with arrow heads (more: plain lines, which draw much faster)
ARROW_LIMIT = 60
#: a window row holds windows that do not overlap; at most this many rows (then they share)
WINDOW_ROWS = 12
FORMATS = ("png", "svg", "html")
#: the figure's margins, in inches: lane names (at least), the legends on the right, the title, the x label
LEFT_IN, LEGEND_IN, TITLE_IN, AXIS_LABEL_IN = 1.0, 2.4, 0.6, 0.55
#: a lane name's width, in inches per character (the axis' tick labels), and its longest line
LANE_CHAR_IN, LANE_LINE_CHARS = 0.09, 24


def render(timeline: Timeline, fmt: str, dpi: int = 110) -> bytes:
    """The picture of ``timeline`` as ``png``, ``svg`` or ``html`` (a page embedding the SVG, with
    a table of the records) bytes."""
    with plt.rc_context({"svg.hashsalt": SVG_SALT}):
        fig = figure(timeline, dpi)
        try:
            buffer = io.BytesIO()
            # fixed margins (figure()), not bbox_inches="tight": that lays the whole figure out twice
            fig.savefig(buffer, format="svg" if fmt == "html" else fmt, dpi=dpi,
                        metadata={"Date": None} if fmt in ("svg", "html") else None)
        finally:
            plt.close(fig)
    data = buffer.getvalue()
    if fmt == "html":
        return html_page(timeline, data.decode("utf-8"), fig.kssim_labels).encode("utf-8")
    return data


def figure(timeline: Timeline, dpi: int = 110) -> Figure:
    """The figure of ``timeline`` (close it with ``plt.close``), its labels placed for ``dpi``;
    ``fig.kssim_labels``: its :class:`Labels` (the hover texts of the HTML page)."""
    origin = time_origin(timeline)
    timeline = shifted(timeline, origin)
    windows = [iv for iv in timeline.intervals if iv.input_index is None]
    window_rows = _pack_rows(windows)
    lanes_y, windows_y, outputs_top = _lane_positions(timeline, max(window_rows, default=-1) + 1)
    steps = len(timeline.steps)
    width = min(20.0, max(7.5, 5 + 0.075 * len(timeline.inputs)))  # the axes; margins come on top
    top_height = 0.5 * len(timeline.lanes) + 0.3 * (max(window_rows, default=-1) + 1) + 0.8
    bottom_height = min(13.0, max(2.4, 0.13 * steps + 1.0))
    height = top_height + bottom_height + TITLE_IN + AXIS_LABEL_IN
    left_in = max(LEFT_IN, 0.15 + LANE_CHAR_IN * max(len(line) for lane in timeline.lanes
                                                        for line in lane_name(lane.label).split("\n")),
                  0.6 + CHAR_WIDTH_IN * max((len(s.label) for s in _shown_rows(timeline)), default=0))
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(width + left_in + LEGEND_IN, height), dpi=dpi,
                                      gridspec_kw={"height_ratios": [top_height, bottom_height], "hspace": 0.08})
    total = width + left_in + LEGEND_IN
    fig.subplots_adjust(left=left_in / total, right=1 - LEGEND_IN / total, top=1 - TITLE_IN / height,
                        bottom=AXIS_LABEL_IN / height)
    xlim, clipped = _x_range(timeline)
    top.set_xlim(*xlim)
    ys = mark_positions(timeline, lanes_y)
    labels = Labels()
    _draw_lanes(top, timeline, lanes_y, ys, labels)
    _draw_windows(top, bottom, timeline, windows, window_rows, windows_y, xlim, labels)
    _draw_links(top, timeline, ys)
    _draw_processing(bottom, timeline)
    _draw_clipped(bottom, clipped, xlim)
    internal = f"{len(timeline.internal)} internal records, " if timeline.internal else ""
    count = f"{len(timeline.inputs)} inputs, {internal}{len(timeline.outputs)} outputs, " \
            f"{len({d.input_index for d in timeline.drops})} dropped"
    tasks = f", {timeline.tasks} tasks" if timeline.tasks > 1 else ""
    top.set_title(f"{timeline.name}\nKafka {timeline.release}, {timeline.operator}{tasks}: {count}",
                  fontsize=10, loc="left")
    bottom.set_xlabel(f"timestamp - {origin} (ms)" if origin else "timestamp (ms)")
    _legends(top, bottom, timeline)
    place_labels(fig, labels)
    fig.kssim_labels = labels
    return fig


# --- layout ---------------------------------------------------------------------------------------

#: matplotlib draws in floats: beyond 2^52 ms neighbouring timestamps would share a position
FLOAT_EXACT_MS = 1 << 52


def time_origin(timeline: Timeline) -> int:
    """0, or for timestamps beyond what a float holds to the millisecond (near Long.MAX_VALUE)
    the smallest record timestamp: the picture's x axis then counts from it."""
    ts = [m.ts for m in timeline.inputs + timeline.outputs + timeline.internal]
    if not ts or max(abs(t) for t in ts) < FLOAT_EXACT_MS:
        return 0
    return min(ts)


def shifted(timeline: Timeline, origin: int) -> Timeline:
    """``timeline`` with every time ``origin`` earlier (the labels keep the real timestamps)."""
    if not origin:
        return timeline

    def at(value):
        return None if value is None else value - origin

    return attrs.evolve(
        timeline,
        inputs=tuple(attrs.evolve(m, ts=m.ts - origin) for m in timeline.inputs),
        outputs=tuple(attrs.evolve(m, ts=m.ts - origin) for m in timeline.outputs),
        internal=tuple(attrs.evolve(m, ts=m.ts - origin) for m in timeline.internal),
        steps=tuple(attrs.evolve(s, ts=s.ts - origin, stream_time=at(s.stream_time)) for s in timeline.steps),
        intervals=tuple(attrs.evolve(iv, start=iv.start - origin, end=iv.end - origin, close=at(iv.close))
                        for iv in timeline.intervals))


def lane_name(label: str) -> str:
    """A lane's name as drawn: a long one (a graph's internal topic,
    ``KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition``) broken at dashes or spaces into lines
    of at most :data:`LANE_LINE_CHARS` characters where it can be."""
    if len(label) <= LANE_LINE_CHARS:
        return label
    lines, line = [], ""
    for part in label.replace(" ", " \0").replace("-", "-\0").split("\0"):
        if line and len(line) + len(part) > LANE_LINE_CHARS:
            lines.append(line.rstrip())
            line = ""
        line += part
    return "\n".join(lines + [line])


def _lane_positions(timeline: Timeline, window_rows: int) -> Tuple[Dict[int, float], List[float], float]:
    """y of each lane (inputs from the top, then a graph's internal topics, then the window rows,
    then outputs)."""
    y = 0.0
    lanes_y = {}
    for kind in (LaneKind.INPUT, LaneKind.INTERNAL):
        for i, lane in enumerate(timeline.lanes):
            if lane.kind is kind:
                lanes_y[i] = y
                y -= 1.0
    windows_y = []
    if window_rows:
        y += 0.35
        for _ in range(window_rows):
            windows_y.append(y)
            y -= 0.38
        y -= 0.35
    outputs_top = y
    for i, lane in enumerate(timeline.lanes):
        if lane.kind is LaneKind.OUTPUT:
            lanes_y[i] = y
            y -= 1.0
    return lanes_y, windows_y, outputs_top


def _pack_rows(intervals) -> List[int]:
    """A row per interval so that intervals of a row do not overlap (first fit, by start), at
    most :data:`WINDOW_ROWS` rows (beyond that, rows are shared)."""
    rows: List[int] = []
    ends: List[float] = []
    for iv in intervals:
        right = iv.close if iv.close is not None else iv.end
        for r, end in enumerate(ends):
            if iv.start > end:
                ends[r] = right
                rows.append(r)
                break
        else:
            if len(ends) < WINDOW_ROWS:
                ends.append(right)
                rows.append(len(ends) - 1)
            else:
                r = min(range(len(ends)), key=ends.__getitem__)
                ends[r] = max(ends[r], right)
                rows.append(r)
    return rows


def _x_range(timeline: Timeline) -> Tuple[Tuple[float, float], List[int]]:
    """The time range drawn: every record, window and close point, except close points far
    beyond the records (a legacy 1-day grace would squash everything): those are clipped, and
    returned so that the picture says where they are."""
    ts = [m.ts for m in timeline.inputs] + [m.ts for m in timeline.outputs]
    # a join window whose upper bound wrapped past Long.MAX_VALUE is [start, 0] (Kafka's fetch
    # finds nothing), closed at once (0): it does not stretch the picture down to 0
    kept = [iv for iv in timeline.intervals if iv.end >= iv.start]
    ts += [v for iv in kept for v in (iv.start, iv.end)]
    if not ts:
        ts = [0]
    low, high = min(ts), max(ts)
    span = max(high - low, 1)
    limit = high + 4 * span  # a grace a few times the records' span still shows
    closes = [iv.close for iv in kept if iv.close is not None]
    high = max([high] + [c for c in closes if c <= limit])
    clipped = sorted({c for c in closes if c > limit})
    pad = max((high - low) * 0.04, 0.5)
    return (low - pad, high + pad), clipped


def _lane_colour(timeline: Timeline, lane: int) -> str:
    info = timeline.lanes[lane]
    if info.kind is LaneKind.OUTPUT:
        return OUTPUT_COLOUR
    if info.kind is LaneKind.INTERNAL:
        return INTERNAL_COLOUR
    if info.topic in TOPIC_COLOURS and timeline.operator != "graph":
        return TOPIC_COLOURS[info.topic]
    topics = list(dict.fromkeys(x.topic for x in timeline.lanes if x.kind is LaneKind.INPUT))
    return SOURCE_COLOURS[topics.index(info.topic) % len(SOURCE_COLOURS)]


class Labels:
    """The figure's movable labels, each with its offsets to try (points from its anchor) and its
    rank (lower ranks claim room first; within a rank, the order they were made), and the hover
    texts of the HTML page: ``titles`` (label id -> full text) and ``point_titles`` (marker
    collection id -> one text per point, in the collection's order)."""

    #: ranks: what must be read first claims room first
    FAILURE, DROP, INPUT, RECORD, WINDOW, STACKED = range(6)

    def __init__(self) -> None:
        self.entries: List[Tuple[int, int, Text, Tuple[Tuple[float, float], ...]]] = []
        self.titles: Dict[str, str] = {}
        self.point_titles: Dict[str, List[str]] = {}
        self.collections: List[object] = []

    def add(self, artist: Text, rank: int, title: str, offsets: Sequence[Tuple[float, float]] = ()) -> None:
        gid = f"kssim-label-{len(self.titles)}"
        artist.set_gid(gid)
        self.titles[gid] = title
        self.entries.append((rank, len(self.entries), artist, tuple(offsets)))

    def points(self, collection, titles: List[str]) -> None:
        gid = f"kssim-marks-{len(self.point_titles)}"
        collection.set_gid(gid)
        self.point_titles[gid] = titles
        self.collections.append(collection)


def place_labels(fig: Figure, labels: Labels) -> None:
    """Place every label of ``labels`` where it overprints no text: the figure's fixed texts
    (title, tick labels, axis labels, legends) first, then the labels by rank, each at the first
    of its offsets where its extent (measured by the renderer, as drawn) overlaps nothing placed;
    a label that fits nowhere is hidden (the HTML page still has it as a hover title). The order
    is fixed, so the same timeline gives the same picture."""
    fig.draw_without_rendering()  # lays out ticks, legends and titles as savefig will
    renderer = fig.canvas.get_renderer()
    movable = {id(entry[2]) for entry in labels.entries}
    placed = _Occupied()
    for text in visible_texts(fig):
        if id(text) not in movable:
            placed.add(text.get_window_extent(renderer))
    for box in _marker_boxes(fig, labels):  # a label must not hide a record either
        placed.add(box)
    frame = fig.bbox
    for _, _, artist, offsets in sorted(labels.entries, key=lambda e: (e[0], e[1])):
        for offset in offsets or (None,):
            if offset is not None:
                artist.xyann = offset
            box = artist.get_window_extent(renderer).padded(LABEL_PAD_PX)
            inside = box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1
            if inside and not placed.overlaps(box):
                placed.add(box)
                break
        else:
            artist.set_visible(False)


def _marker_boxes(fig: Figure, labels: Labels) -> List[Bbox]:
    """The box of every record marker (display pixels)."""
    boxes = []
    for collection in labels.collections:
        points = collection.get_offset_transform().transform(collection.get_offsets())
        half = max(collection.get_sizes()) ** 0.5 / 2 * fig.dpi / 72
        boxes += [Bbox.from_extents(x - half, y - half, x + half, y + half) for x, y in points]
    return boxes


def visible_texts(fig: Figure) -> List[Text]:
    """The texts ``fig`` draws (after a layout: ``draw_without_rendering``): the figure's, each
    axes' titles, the labels of the ticks its axes draw (those in view), its axis labels, its
    legends', its texts and annotations (an annotation only where its point is inside its axes:
    matplotlib draws no other); visible and not empty."""
    texts: List[Text] = list(fig.texts)
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title]  # noqa: SLF001 - the loc="left" title lives there
        for axis in (ax.xaxis, ax.yaxis):
            if not axis.get_visible():
                continue
            for tick in axis._update_ticks():  # noqa: SLF001 - the ticks in view, the ones drawn
                texts += [tick.label1, tick.label2]
            texts += [axis.label, axis.offsetText]
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            texts += list(legend.get_texts()) + [legend.get_title()]
        for text in ax.texts:
            if isinstance(text, Annotation) and text.xycoords == "data" \
                    and not ax.contains_point(ax.transData.transform(text.xy)):
                continue
            texts.append(text)
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


class _Occupied:
    """Boxes placed so far, bucketed by x (pixels) so that a check looks at its neighbours only."""

    BUCKET = 64.0

    def __init__(self) -> None:
        self.buckets: Dict[int, list] = {}

    def _keys(self, box):
        return range(int(box.x0 // self.BUCKET), int(box.x1 // self.BUCKET) + 1)

    def add(self, box) -> None:
        for k in self._keys(box):
            self.buckets.setdefault(k, []).append(box)

    def overlaps(self, box) -> bool:
        return any(boxes_overlap(box, other) for k in self._keys(box) for other in self.buckets.get(k, ()))


def boxes_overlap(a, b) -> bool:
    """Whether two boxes share area (touching edges do not count)."""
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


# --- the records panel ------------------------------------------------------------------------------

#: records of one lane at one timestamp are stacked this far apart (lane units), at most STACK deep
STACK_STEP, STACK = 0.19, 3
#: a lane with at most this many records labels its stacked records too
SPARSE_LANE = 30


def mark_positions(timeline: Timeline, lanes_y) -> Dict[Tuple[LaneKind, int], float]:
    """The y of every record, keyed (lane kind, index): its lane's, records sharing a lane and a
    timestamp stacked downwards so that none hides another (a session's tombstone and its merged
    session, a join's several results)."""
    seen: Dict[Tuple[int, int], int] = {}
    out = {}
    for kind, marks in ((LaneKind.INPUT, timeline.inputs), (LaneKind.INTERNAL, timeline.internal),
                        (LaneKind.OUTPUT, timeline.outputs)):
        for m in marks:
            n = seen.get((m.lane, m.ts), 0)
            seen[(m.lane, m.ts)] = n + 1
            out[(kind, m.index)] = lanes_y[m.lane] - STACK_STEP * min(n, STACK)
    return out


def _draw_lanes(ax, timeline: Timeline, lanes_y, ys, labels: Labels) -> None:
    dropped: Dict[int, List[str]] = {}
    for d in timeline.drops:
        codes = dropped.setdefault(d.input_index, [])
        if d.reason.code not in codes:
            codes.append(d.reason.code)
    by_lane: Dict[int, List[RecordMark]] = {}
    for mark in timeline.inputs + timeline.internal + timeline.outputs:
        by_lane.setdefault(mark.lane, []).append(mark)
    for lane, y in lanes_y.items():
        ax.axhline(y, color="0.85", lw=0.8, zorder=0)
        marks = sorted(by_lane.get(lane, []), key=lambda m: (m.ts, m.index))
        colour = _lane_colour(timeline, lane)
        lane_kind = timeline.lanes[lane].kind
        is_input = lane_kind is LaneKind.INPUT
        for kind in MarkKind:
            shown = [m for m in marks if m.kind is kind]
            if shown:
                filled = kind is MarkKind.VALUE
                points = ax.scatter([m.ts for m in shown], [ys[(lane_kind, m.index)] for m in shown],
                                    marker=MARKERS[kind], s=36, zorder=3, linewidths=1.3,
                                    facecolors=colour if filled else "white", edgecolors=colour)
                labels.points(points, [record_title(timeline, lane_kind, m) for m in shown])
        # a stack's first record is labelled above the lane (up to three staggered heights); the
        # ones stacked under it beside themselves, where the lane is sparse enough to leave room
        rank = Labels.INPUT if is_input else Labels.RECORD
        for m in marks:
            if ys[(lane_kind, m.index)] == y:
                text = ax.annotate(m.label, (m.ts, y), xytext=(0, 7), textcoords="offset points", ha="center",
                                   va="bottom", fontsize=LABEL_SIZE, color="0.15", zorder=4)
                labels.add(text, rank, record_title(timeline, lane_kind, m), ((0, 7), (0, 16), (0, 25)))
        if len(marks) <= SPARSE_LANE:
            for m in marks:
                if ys[(lane_kind, m.index)] != y:
                    text = ax.annotate(m.label, (m.ts, ys[(lane_kind, m.index)]), xytext=(6, 0),
                                       textcoords="offset points", ha="left", va="center",
                                       fontsize=LABEL_SIZE - 0.5, color="0.3", zorder=4)
                    labels.add(text, Labels.STACKED, record_title(timeline, lane_kind, m))
        if is_input:
            _draw_drops(ax, timeline, [m for m in marks if m.index in dropped], dropped, ys, labels)
    ax.set_yticks(list(lanes_y.values()), [lane_name(timeline.lanes[i].label) for i in lanes_y])
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(min(lanes_y.values()) - 0.75, max(lanes_y.values()) + 0.75)
    for side in ("right", "left", "top"):
        ax.spines[side].set_visible(False)
    failure = timeline.failure
    if failure is not None:
        mark = timeline.inputs[failure.input_index]
        ax.scatter([mark.ts], [ys[(LaneKind.INPUT, mark.index)]], marker="*", s=260, color=DROP_COLOUR, zorder=5)
        text = ax.annotate(f"Kafka Streams dies here: {cut_label(failure.message, FAILURE_CHARS)}",
                           (mark.ts, ys[(LaneKind.INPUT, mark.index)]), xytext=(8, -14), textcoords="offset points",
                           fontsize=LABEL_SIZE + 1, color=DROP_COLOUR)
        labels.add(text, Labels.FAILURE, f"Kafka Streams dies here: {failure.message}",
                   ((8, -14), (8, 10), (8, -28)))


def record_title(timeline: Timeline, kind: LaneKind, mark: RecordMark) -> str:
    """A record's full text, for the HTML page's hover: what it is, where, and its fate."""
    lane = timeline.lanes[mark.lane].label
    text = f"{kind.value} {mark.index} on {lane}: {show(mark.key)}:{show(mark.value)} @ {mark.ts}"
    if kind is LaneKind.INPUT:
        reasons = [f"{d.reason.code}: {d.text}" for d in timeline.drops if d.input_index == mark.index]
        lost = [f"{d.reason.code}: {d.text}" for d in timeline.lost_at if d.input_index == mark.index]
        text += "".join(f"\ndropped, {r}" for r in reasons) + "".join(f"\naggregated; {r}" for r in lost)
    elif kind is LaneKind.OUTPUT:
        text += f"\nemitted while input {timeline.links[mark.index].input_index} was processed"
    elif mark.source is not None:
        text += f"\nwritten while input {mark.source} was processed"
    return text


def _draw_drops(ax, timeline: Timeline, marks: List[RecordMark], codes: Dict[int, List[str]], ys,
                labels: Labels) -> None:
    if not marks:
        return
    ax.scatter([m.ts for m in marks], [ys[(LaneKind.INPUT, m.index)] for m in marks], marker="x", s=70,
               color=DROP_COLOUR, linewidths=1.8, zorder=5)
    low = min(ys[(LaneKind.INPUT, m.index)] for m in marks)  # below the lowest stacked record
    for m in marks:
        text = ax.annotate("+".join(codes[m.index]), (m.ts, low), xytext=(0, -9), textcoords="offset points",
                           ha="center", va="top", fontsize=LABEL_SIZE - 0.5, color=DROP_COLOUR, zorder=4)
        labels.add(text, Labels.DROP, record_title(timeline, LaneKind.INPUT, m), ((0, -9), (0, -17)))


def _draw_links(ax, timeline: Timeline, ys) -> None:
    """A grey arrow from each output to the input whose processing emitted it; a dotted line from
    each internal record (a graph's) to the input whose processing wrote it."""
    crossed = [((timeline.inputs[m.source].ts, ys[(LaneKind.INPUT, m.source)]),
                (m.ts, ys[(LaneKind.INTERNAL, m.index)])) for m in timeline.internal if m.source is not None]
    if crossed:
        ax.add_collection(LineCollection(crossed, colors=INTERNAL_COLOUR, alpha=0.35, linewidths=0.7,
                                         linestyles=":", zorder=1))
    segments = []
    for link in timeline.links:
        out, src = timeline.outputs[link.output], timeline.inputs[link.input_index]
        segments.append(((src.ts, ys[(LaneKind.INPUT, src.index)]), (out.ts, ys[(LaneKind.OUTPUT, out.index)])))
    alpha = 0.55 if len(segments) <= ARROW_LIMIT else 0.25
    if len(segments) <= ARROW_LIMIT:
        for start, end in segments:
            ax.annotate("", xy=end, xytext=start, zorder=1,
                        arrowprops=dict(arrowstyle="-|>", color="0.45", alpha=alpha, lw=0.8, shrinkA=5, shrinkB=5,
                                        mutation_scale=8))
    elif segments:
        ax.add_collection(LineCollection(segments, colors="0.45", alpha=alpha, linewidths=0.6, zorder=1))


def _draw_windows(top, bottom, timeline: Timeline, windows, rows: List[int], rows_y: List[float], xlim,
                  labels: Labels) -> None:
    """Aggregation windows in the records panel (bar, then the grace up to the close tick), and
    their close points as dotted lines across the processing panel (where stream time reaches
    one, that window is closed)."""
    if not windows:
        return
    keys = sorted({show(iv.key) for iv in windows})
    # not the topics' blue and orange: windows are per key
    colours = {k: plt.get_cmap("Dark2")(i % 8) for i, k in enumerate(keys)}
    several_tasks = len({iv.task for iv in windows}) > 1
    rules = {rule.kind: rule for rule in timeline.close_rules}
    for iv, row in zip(windows, rows):
        y = rows_y[row]
        # a window never emitted is the drop colour: "why did this window never emit" at a glance
        colour = DROP_COLOUR if iv.lost else colours[show(iv.key)]
        alpha = 0.3 if iv.superseded else 0.75
        if iv.end > iv.start:
            top.plot([iv.start, iv.end], [y, y], color=colour, lw=5, alpha=alpha, solid_capstyle="butt", zorder=2)
        else:  # a one-record session [ts, ts]: a dot, not an invisible bar
            top.plot([iv.start], [y], marker="o", markersize=5, color=colour, alpha=alpha, zorder=2)
        if iv.close is not None and iv.close >= iv.end:  # a wrapped close (0) is closed at once: no grace
            top.plot([iv.end, iv.close], [y, y], color=colour, lw=1, alpha=alpha, zorder=2)
            top.plot([iv.close], [y], marker="|", markersize=9, color=colour, alpha=max(alpha, 0.5), zorder=2)
        text = show(iv.key) + (f" (task {iv.task})" if several_tasks else "") + (" merged" if iv.superseded else "") \
            + (" never emitted" if iv.lost else "")
        label = top.annotate(cut_label(text, WINDOW_LABEL_CHARS), (iv.start, y), xytext=(1, 3),
                             textcoords="offset points", fontsize=LABEL_SIZE - 0.5, color="0.25", va="bottom")
        labels.add(label, Labels.WINDOW, window_title(iv, text, rules.get(iv.kind)))
    closes = sorted({iv.close for iv in windows if iv.close is not None})
    if len(closes) <= 40:
        for c in closes:
            bottom.axvline(c, color="0.5", lw=0.8, ls=":", zorder=1.6)  # above the grid, which may sit there too


def window_title(iv, text: str, rule) -> str:
    """A window's full text, for the HTML page's hover: key, bounds, close point and rule."""
    bounds = f"[{iv.start}, {iv.end})" if iv.kind is IntervalKind.TIME_WINDOW else f"[{iv.start}, {iv.end}]"
    close = "never closes (no grace in this release)" if iv.close is None else \
        f"closed from stream time {iv.close}" + (f": {rule.text}" if rule is not None else "")
    return f"{iv.kind.value} {bounds} task {iv.task}: {text}\n{close}"


# --- the processing panel ------------------------------------------------------------------------------

def _shown_rows(timeline: Timeline):
    """The processing rows whose names are drawn: every row, or every n-th of many (at most 40)."""
    every = max(1, -(-len(timeline.steps) // 40))
    return [s for s in timeline.steps if s.step % every == 0]


def _draw_processing(ax, timeline: Timeline) -> None:
    step_of = {s.input_index: s.step for s in timeline.steps}
    dropped = {d.input_index for d in timeline.drops}
    # each input's own interval (join window, grace buffer) on its row; one collection per kind
    # of line (hundreds of single plots would make a 200-record picture slow)
    bars, bar_colours, graces, grace_colours, ticks = [], [], [], [], {}
    for iv in timeline.intervals:
        if iv.input_index is None or iv.input_index not in step_of:
            continue
        y = step_of[iv.input_index]
        colour = _lane_colour(timeline, timeline.inputs[iv.input_index].lane)
        if iv.end > iv.start:
            bars.append(((iv.start, y), (iv.end, y)))
            bar_colours.append(colour)
        if iv.close is not None and iv.close >= iv.end:  # a wrapped close (0) is closed at once: no grace
            graces.append(((iv.end, y), (iv.close, y)))
            grace_colours.append(colour)
            ticks.setdefault(colour, []).append((iv.close, y))
    if bars:
        ax.add_collection(LineCollection(bars, colors=bar_colours, linewidths=4, alpha=0.22, capstyle="butt", zorder=1))
    if graces:
        ax.add_collection(LineCollection(graces, colors=grace_colours, linewidths=1, alpha=0.6, zorder=1))
    for colour, points in ticks.items():
        ax.scatter(*zip(*points), marker="|", s=45, color=colour, alpha=0.9, zorder=1, linewidths=1)
    groups: Dict[Tuple[str, MarkKind], List[Tuple[int, int]]] = {}
    crosses = []
    for step in timeline.steps:
        mark = timeline.inputs[step.input_index]
        groups.setdefault((_lane_colour(timeline, mark.lane), mark.kind), []).append((mark.ts, step.step))
        if step.input_index in dropped:
            crosses.append((mark.ts, step.step))
    for (colour, kind), points in groups.items():
        ax.scatter(*zip(*points), marker=MARKERS[kind], s=22, zorder=3, linewidths=1,
                   facecolors=colour if kind is MarkKind.VALUE else "white", edgecolors=colour)
    if crosses:
        ax.scatter(*zip(*crosses), marker="x", s=40, color=DROP_COLOUR, linewidths=1.4, zorder=4)
    emitted = [(o.ts, step_of[timeline.links[o.index].input_index]) for o in timeline.outputs
               if timeline.links[o.index].input_index in step_of]
    if emitted:
        ax.scatter(*zip(*emitted), marker="D", s=14, color=OUTPUT_COLOUR, zorder=3, alpha=0.8)
    crossed = [(m.ts, step_of[m.source]) for m in timeline.internal if m.source in step_of]
    if crossed:
        ax.scatter(*zip(*crossed), marker="s", s=10, color=INTERNAL_COLOUR, zorder=3, alpha=0.8)
    for task in range(timeline.tasks):
        xs, ys = _stream_time_path(timeline, task)
        if xs:
            ax.plot(xs, ys, color=TASK_COLOURS[task % len(TASK_COLOURS)], lw=1.4, zorder=2, alpha=0.9)
    steps = len(timeline.steps)
    ax.set_ylim(steps - 0.5 if steps else 0.5, -0.8)
    ticks_shown = _shown_rows(timeline)
    ax.set_yticks([s.step for s in ticks_shown], [s.label for s in ticks_shown], fontsize=LABEL_SIZE)
    ax.set_ylabel("processing order", fontsize=8)
    ax.grid(axis="x", color="0.92", lw=0.6)
    for side in ("right", "top"):
        ax.spines[side].set_visible(False)


def _stream_time_path(timeline: Timeline, task: int) -> Tuple[List[float], List[float]]:
    """The step line of a task's stream time: it jumps right at the top of the row of each of its
    inputs (the stream time after that input) and holds, vertically, until its next input."""
    own = timeline.steps_of(task)
    xs: List[float] = []
    ys: List[float] = []
    for i, s in enumerate(own):
        until = own[i + 1].step - 0.5 if i + 1 < len(own) else len(timeline.steps) - 0.5
        xs += [s.stream_time, s.stream_time]
        ys += [s.step - 0.5, until]
    return xs, ys


def _draw_clipped(ax, clipped: List[int], xlim) -> None:
    if clipped:
        text = ", ".join(str(c) for c in clipped[:3]) + (" ..." if len(clipped) > 3 else "")
        ax.annotate(f"close points beyond the picture: {text} \u2192", (1, 1.0), xycoords="axes fraction",
                    ha="right", va="bottom", fontsize=LABEL_SIZE, color="0.35")


def _legends(top, bottom, timeline: Timeline) -> None:
    handles = [Line2D([], [], ls="", marker=MARKERS[k], color="0.3", markerfacecolor="0.3" if k is MarkKind.VALUE
                      else "white", label=MARK_NAMES[k]) for k in MarkKind]
    handles.append(Line2D([], [], ls="", marker="x", color=DROP_COLOUR, markeredgewidth=1.8, label="dropped (reason)"))
    if timeline.links:
        handles.append(Line2D([], [], color="0.45", lw=0.8, label="output \u2190 input that emitted it"))
    if timeline.internal:
        handles.append(Line2D([], [], color=INTERNAL_COLOUR, lw=0.8, ls=":", label="internal record \u2190 its input"))
    if any(iv.input_index is None for iv in timeline.intervals):
        handles.append(Line2D([], [], color="0.5", lw=5, alpha=0.75, label="window (one row per window)"))
        handles.append(Line2D([], [], color="0.5", lw=1, marker="|", markevery=[1],
                              label="its grace, up to the close |"))
    if any(iv.lost for iv in timeline.intervals):
        handles.append(Line2D([], [], color=DROP_COLOUR, lw=4, alpha=0.75, label="window never emitted (expired)"))
    top.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    handles = [Line2D([], [], color=TASK_COLOURS[t % len(TASK_COLOURS)], lw=1.4,
                      label=f"stream time, task {t}" if timeline.tasks > 1 else "stream time")
               for t in range(timeline.tasks)]
    kinds = {iv.kind for iv in timeline.intervals if iv.input_index is not None}
    rules = {rule.kind: rule for rule in timeline.close_rules}
    if IntervalKind.JOIN_WINDOW in kinds:
        handles.append(Line2D([], [], color="0.5", lw=4, alpha=0.35, label="join window"))
        handles.append(Line2D([], [], color="0.5", lw=1, marker="|", markevery=[1],
                              label=_wrap(f"grace to the close |: {rules[IntervalKind.JOIN_WINDOW].text}")))
    if IntervalKind.GRACE_BUFFER in kinds:
        handles.append(Line2D([], [], color="0.5", lw=1, marker="|", markevery=[1],
                              label=_wrap(f"grace buffer up to |: {rules[IntervalKind.GRACE_BUFFER].text}")))
    closing = sorted({iv.kind for iv in timeline.intervals if iv.input_index is None and iv.close is not None},
                     key=list(IntervalKind).index)
    for kind in closing:
        handles.append(Line2D([], [], color="0.6", lw=0.7, ls=":",
                              label=_wrap(f"close (|, dotted): {rules[kind].text}")))
    if timeline.outputs:
        handles.append(Line2D([], [], ls="", marker="D", color=OUTPUT_COLOUR, markersize=4, label="output emitted"))
    if timeline.internal:
        handles.append(Line2D([], [], ls="", marker="s", color=INTERNAL_COLOUR, markersize=3.5,
                              label="internal record written"))
    bottom.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)


def _wrap(text: str) -> str:
    """A legend entry in lines that fit the legend's margin; a sum (``end + gap + grace``) is
    never broken (no-break spaces, which matplotlib draws as spaces)."""
    return "\n".join(textwrap.wrap(text.replace(" + ", "\u00a0+\u00a0"), LEGEND_CHARS))


# --- HTML ----------------------------------------------------------------------------------------------

def html_page(timeline: Timeline, svg: str, labels: Optional[Labels] = None) -> str:
    """A self-contained page: the SVG inline (each label and record marker with its full text as
    a hover title), then the inputs, a graph's internal records and the outputs as tables."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else svg  # drop the XML prologue: the SVG is inline
    if labels is not None:
        svg = with_hover_titles(svg, labels)
    reasons: Dict[int, List[str]] = {}
    for d in timeline.drops:
        reasons.setdefault(d.input_index, []).append(f"{d.reason.code}: {d.text}")
    for d in timeline.lost_at:  # aggregated, not dropped: its close check found a window gone
        reasons.setdefault(d.input_index, []).append(f"not dropped; {d.reason.code}: {d.text}")
    lanes = timeline.lanes
    emitted_by = {link.output: link.input_index for link in timeline.links}
    rows_in = "".join(
        f"<tr><td>{m.index}</td><td>{_e(lanes[m.lane].label)}</td><td>{_e(show(m.key))}</td>"
        f"<td>{_e(show(m.value))}</td><td>{m.ts}</td><td>{_e('; '.join(reasons.get(m.index, [])))}</td></tr>"
        for m in timeline.inputs)
    rows_out = "".join(
        f"<tr><td>{m.index}</td><td>{_e(lanes[m.lane].label)}</td><td>{_e(show(m.key))}</td>"
        f"<td>{_e(show(m.value))}</td><td>{m.ts}</td><td>{emitted_by.get(m.index, '')}</td></tr>"
        for m in timeline.outputs)
    internal = ""
    if timeline.internal:
        rows = "".join(
            f"<tr><td>{m.index}</td><td>{_e(lanes[m.lane].label)}</td><td>{_e(show(m.key))}</td>"
            f"<td>{_e(show(m.value))}</td><td>{m.ts}</td><td>{'' if m.source is None else m.source}</td></tr>"
            for m in timeline.internal)
        internal = ("<h2>Internal records</h2><table><tr><th>#</th><th>topic</th><th>key</th><th>value</th><th>ts</th>"
                    f"<th>written at input</th></tr>{rows}</table>\n")
    title = _e(f"{timeline.name} (Kafka {timeline.release}, {timeline.operator})")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font-family:sans-serif;margin:1.5em}} table{{border-collapse:collapse;margin:1em 0;font-size:90%}}
td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}} svg{{max-width:100%;height:auto}}</style></head>
<body><h1>{title}</h1>
{svg}
<h2>Inputs</h2><table><tr><th>input</th><th>lane</th><th>key</th><th>value</th><th>ts</th><th>dropped</th></tr>{rows_in}</table>
{internal}<h2>Outputs</h2><table><tr><th>#</th><th>lane</th><th>key</th><th>value</th><th>ts</th><th>emitted by input</th></tr>{rows_out}</table>
</body></html>
"""


def _e(text) -> str:
    return html.escape(str(text))


_MARKER = re.compile(r"<(use|path) [^>]*?/>")
_GROUP_EDGE = re.compile(r"<g[ >]|</g>")


def with_hover_titles(svg: str, labels: Labels) -> str:
    """``svg`` with an SVG ``<title>`` (a browser's hover text) in each drawn label's group and in
    each marker of the record collections (``Labels.titles`` and ``Labels.point_titles``, found by
    their ids; a hidden label has no group and keeps its text on its record's marker)."""
    for gid, title in labels.titles.items():
        svg = svg.replace(f'<g id="{gid}">', f'<g id="{gid}"><title>{_e(title)}</title>', 1)
    for gid, titles in labels.point_titles.items():
        start = svg.find(f'<g id="{gid}">')
        if start >= 0:
            end = _group_end(svg, start)
            svg = svg[:start] + _titled_markers(svg[start:end], titles) + svg[end:]
    return svg


def _group_end(svg: str, start: int) -> int:
    """Where the ``<g>`` opened at ``start`` closes (after its ``</g>``)."""
    depth = 0
    for edge in _GROUP_EDGE.finditer(svg, start):
        depth += 1 if edge.group() != "</g>" else -1
        if depth == 0:
            return edge.end()
    return len(svg)


def _titled_markers(group: str, titles: List[str]) -> str:
    """A marker collection's group with a title in each marker: its ``<use>`` s (matplotlib draws
    many markers as uses of one path in ``<defs>``) or else its ``<path>`` s, in point order."""
    kind = "use" if "<use " in group else "path"
    markers = iter(titles)

    def titled(found):
        if found.group(1) != kind:
            return found.group()
        title = next(markers, None)
        if title is None:
            return found.group()
        return f"{found.group()[:-2]}><title>{_e(title)}</title></{kind}>"

    return _MARKER.sub(titled, group)
