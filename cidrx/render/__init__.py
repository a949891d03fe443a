"""Renderers: pure functions from a Diagnosis or Plan to text, one module per format.

`render_diagnosis(d, fmt)` / `render_plan(plan, fmt)` pick the module, importing only the one asked for.
`prometheus` is for diagnoses only (metrics of capacity and findings); a plan asked for in it is an input
error, and PLAN_FORMATS lists what plans render to. `html` draws the snapshot's address maps too, so the
CLI calls cidrx.render.html with them (`render_plan` cannot: a plan alone has no map).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cidrx.model.findings import Diagnosis
    from cidrx.model.plan import Plan
    from cidrx.render.term import Term

FORMATS = ("table", "json", "markdown", "prometheus", "html")
PLAN_FORMATS = ("table", "json", "markdown", "html")


# The formats whose module renders a diagnosis and a plan alike: `render_diagnosis(x)` / `render_plan(x)`.
_PLAIN = {"json": "cidrx.render.jsonout", "markdown": "cidrx.render.markdown"}


def render_diagnosis(d: Diagnosis, fmt: str, term: Term | None = None) -> str:
    """`d` as `fmt`; `term` (width, colour) shapes only the table format (default: 80 columns, no colour)."""
    if fmt == "table":
        from cidrx.render import table

        return table.render_diagnosis(d, term) if term else table.render_diagnosis(d)
    if fmt == "prometheus":
        from cidrx.render import prometheus

        return prometheus.render_prometheus(d)
    if fmt == "html":  # without the snapshot's address maps; the CLI passes them (cidrx.app.diagnose.address_maps)
        from cidrx.render import html

        return html.render_html(d, ())
    if fmt in _PLAIN:
        text: str = importlib.import_module(_PLAIN[fmt]).render_diagnosis(d)
        return text
    raise ValueError(f"unknown output format {fmt!r}")


def render_plan(plan: Plan, fmt: str, term: Term | None = None) -> str:
    if fmt == "table":
        from cidrx.render import table

        return table.render_plan(plan, term) if term else table.render_plan(plan)
    if fmt == "prometheus":
        from cidrx.errors import InvalidInput

        raise InvalidInput("-o prometheus renders diagnoses only; show a plan as table, json or markdown")
    if fmt == "html":
        raise ValueError("an HTML plan needs its snapshot's address maps: use cidrx.render.html.render_html")
    if fmt in _PLAIN:
        text: str = importlib.import_module(_PLAIN[fmt]).render_plan(plan)
        return text
    raise ValueError(f"unknown output format {fmt!r}")
