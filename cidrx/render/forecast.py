"""A forecast as a table, as the `cidrx.forecast/v1` JSON document, or as one self-contained HTML page with a
chart per range (history, the fitted trend projected to the horizon with its 95 % band, the size line).

Pure: a Forecast in, text out. The JSON keeps every key on every range (null when not applicable).
"""

from __future__ import annotations

from html import escape
from typing import Any

from cidrx.model import codec
from cidrx.model.forecast import Forecast, RangeForecast, document
from cidrx.model.trend import DAY
from cidrx.render.html import CSS
from cidrx.render.table import grid, paint
from cidrx.render.term import PLAIN, Term

FORMATS = ("table", "json", "html")


def _days(d: float | None) -> str:
    return "-" if d is None else f"{d:g}"


def render_json(f: Forecast) -> str:
    """The `cidrx.forecast/v1` document (docs/schemas/forecast.schema.json): every key, null when not known."""
    return codec.dumps(document(f))


def _window_text(r: RangeForecast) -> str:
    w = r.window
    text = f"{w.points} pts from {w.start[5:16].replace('T', ' ')}"
    if w.after_step and not w.steps_removed:
        text += ", after a step"
    elif w.steps_removed:
        text += f", step at {w.after_step[5:16].replace('T', ' ') if w.after_step else '?'} taken out"
    return text


def _runs_out(r: RangeForecast, horizon: float) -> str:
    if r.days_left == 0:
        return "full now"
    if r.runs_out_at is None:
        return f"not within {horizon:g}d"
    band = f"{_days(r.days_left_low)}-{_days(r.days_left_high) if r.days_left_high is not None else '?'}d"
    return f"{r.runs_out_at[:10]} ({_days(r.days_left)}d, {band})"


def render_table(f: Forecast, term: Term = PLAIN) -> str:
    headers = ["kind", "name", "cidr", "size", "used", "trend/day", "runs out", "window"]
    rows: list[list[Any]] = []
    styles: list[list[str | None]] = []
    for r in f.ranges:
        runs_out = _runs_out(r, f.horizon_days)
        rows.append([r.kind, r.name, r.cidr or "", r.size, r.used, f"{r.trend_per_day:+g}", runs_out, _window_text(r)])
        soon = r.days_left is not None and r.days_left <= 7
        style = "bold red" if soon else ("yellow" if r.days_left is not None else None)
        styles.append([style if h == "runs out" else None for h in headers])
    title = f"cidrx forecast of {f.target} from {f.prometheus} ({f.history_days:g}d of history, as of {f.generated_at})"
    table = grid(headers, rows, term, styles=styles) if rows else "  (no range has two samples yet)"
    soonest = next((r for r in f.ranges if r.days_left is not None), None)
    last = (
        f"soonest: {soonest.kind} {soonest.name}: {_runs_out(soonest, f.horizon_days)}"
        if soonest
        else f"nothing runs out within {f.horizon_days:g} days"
    )
    return f"{paint(title, 'bold', term)}\n\n{table}\n\n{last}\n"


# --- HTML ------------------------------------------------------------------------------------------------

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 720.0, 220.0, 56.0, 26.0, 12.0, 12.0


def _chart(r: RangeForecast, horizon: float, now: float, ident: int) -> str:
    """History (dots and line), the fitted trend from the window's start to the horizon with its band, the
    range's size as a red line and `now` as a dashed vertical line."""
    if not r.history:
        return ""
    t0 = r.history[0][0]
    t1 = now + horizon * DAY
    top = max([r.size, *(y for _, y in r.history)]) * 1.05 or 1.0

    def x(t: float) -> float:
        return PAD_L + (t - t0) / max(1.0, t1 - t0) * (W - PAD_L - PAD_R)

    def y(v: float) -> float:
        return PAD_T + (1 - v / top) * (H - PAD_T - PAD_B)

    # Lines leaving the plot (a projection above the top) are clipped by the plot area, not bent into it.
    clip = f"plot{ident}"

    parts = [f'<svg viewBox="0 0 {W:g} {H:g}" width="{W:g}" height="{H:g}" role="img">']
    parts.append(
        f'<rect x="{PAD_L}" y="{PAD_T}" width="{W - PAD_L - PAD_R}" height="{H - PAD_T - PAD_B}" '
        'fill="#fbfbfb" stroke="#ddd"/>'
    )
    for frac in (0.0, 0.5, 1.0):
        v = top / 1.05 * frac
        parts.append(f'<text x="{PAD_L - 4}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>')
    parts.append(
        f'<clipPath id="{clip}"><rect x="{PAD_L}" y="{PAD_T}" width="{W - PAD_L - PAD_R}" '
        f'height="{H - PAD_T - PAD_B}"/></clipPath><g clip-path="url(#{clip})">'
    )
    # The fit: level at now, slopes per second.
    level = float(r.used) if r.days_left == 0 else r.level
    start = _ts(r.window.start)
    band_pts = [
        (x(now), y(level)),
        (x(t1), y(level + r.trend_high_per_day / DAY * (t1 - now))),
        (x(t1), y(level + r.trend_low_per_day / DAY * (t1 - now))),
    ]
    parts.append(
        '<polygon class="band" points="' + " ".join(f"{a:.1f},{b:.1f}" for a, b in band_pts) + '" fill="#dceafb"/>'
    )
    pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in r.history)
    parts.append(f'<polyline points="{pts}" fill="none" stroke="#e8833a" stroke-width="1.5"/>')
    parts.append(_line(x, y, start, now, t1, level, r.trend_per_day / DAY, "trend") + "</g>")
    parts.append(
        f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{y(r.size):.1f}" y2="{y(r.size):.1f}" stroke="#d64541" '
        f'stroke-width="1.5"/><text x="{W - PAD_R - 4}" y="{y(r.size) - 4:.1f}" '
        f'text-anchor="end">size {r.size:,}</text>'
    )
    parts.append(
        f'<line x1="{x(now):.1f}" x2="{x(now):.1f}" y1="{PAD_T}" y2="{H - PAD_B}" stroke="#555" '
        'stroke-dasharray="4 3"/>'
        f'<text x="{x(now) + 4:.1f}" y="{H - PAD_B + 16}">now</text>'
        f'<text x="{PAD_L}" y="{H - PAD_B + 16}">{escape(_date(t0))}</text>'
        f'<text x="{W - PAD_R}" y="{H - PAD_B + 16}" text-anchor="end">{escape(_date(t1))} (+{horizon:g}d)</text>'
    )
    if r.window.after_step:
        xs = x(_ts(r.window.after_step))
        parts.append(
            f'<line x1="{xs:.1f}" x2="{xs:.1f}" y1="{PAD_T}" y2="{H - PAD_B}" stroke="#9b59b6" stroke-dasharray="2 2"/>'
            f'<text x="{xs + 3:.1f}" y="{PAD_T + 12}" fill="#9b59b6">step</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _line(x: Any, y: Any, start: float, now: float, end: float, level: float, slope: float, cls: str) -> str:
    return (
        f'<line class="{cls}" x1="{x(start):.1f}" y1="{y(level + slope * (start - now)):.1f}" x2="{x(end):.1f}" '
        f'y2="{y(level + slope * (end - now)):.1f}" stroke="#2f6fc4" stroke-width="2" stroke-dasharray="6 3"/>'
    )


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _date(t: float) -> str:
    from cidrx.model.forecast import rfc3339

    return rfc3339(t)[:10]


def render_html(f: Forecast) -> str:
    now = _ts(f.generated_at)
    title = f"cidrx forecast of {f.target}"
    meta = f"from {f.prometheus}; {f.history_days:g} days of history; horizon {f.horizon_days:g} days; {f.generated_at}"
    sections = []
    for i, r in enumerate(f.ranges):
        head = f"{r.kind} {r.name}" + (f" ({r.cidr})" if r.cidr else "")
        summary = (
            f"{r.used:,} of {r.size:,} used; trend {r.trend_per_day:+g}/day "
            f"(95 %: {r.trend_low_per_day:+g} to {r.trend_high_per_day:+g}); runs out: {_runs_out(r, f.horizon_days)}; "
            f"fitted on {_window_text(r)}"
        )
        badge = ' <span class="badge">FULL</span>' if r.days_left == 0 else ""
        sections.append(
            f"<h3>{escape(head)}{badge}</h3><p class='sum'>{escape(summary)}</p>{_chart(r, f.horizon_days, now, i)}"
        )
    legend = (
        "<p class='legend'><span><i style='background:#e8833a'></i>used (history)</span>"
        "<span><i style='background:#2f6fc4'></i>trend (projected)</span>"
        "<span><i style='background:#dceafb'></i>95 % band</span>"
        "<span><i style='background:#d64541'></i>size</span></p>"
    )
    body = f"<h1>{escape(title)}</h1><p class='meta'>{escape(meta)}</p>{legend}" + (
        "".join(sections) or "<p>No range has two samples yet.</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )
