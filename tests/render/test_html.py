"""`-o html`: one self-contained page per diagnosis or plan, with an SVG address map per network.

The pages of the bundled examples are opened in a real headless browser (the system's Chromium, driven
over the DevTools protocol by Playwright; no browser is downloaded): no console error, no page exception,
no request that fails or leaves the file, one shape per range with its title, and a screenshot of each
map; and on every bundled example at 760, 1100 and 1600 px, the geometry: nothing wider than the window,
no two labels overlapping, every range inside the one that holds it, every capacity row one line. Without
Chromium or Playwright those tests skip, unless CIDRX_REQUIRE_TOOLS says they must run (CI), where they fail.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cidrx.app import diagnose as app_diagnose
from cidrx.cli import cli
from cidrx.model.netmap import NetworkMap
from cidrx.model.plan import load_plan
from cidrx.model.snapshot import load_snapshot
from cidrx.render.html import render_html, with_plan
from tests.support.tools_required import ENV, require

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]

# (page name, cidrx arguments, plan file the command writes or None)
PAGES: list[tuple[str, list[str]]] = [
    ("eks-diagnosis", ["diagnose", "--snapshot", f"{EXAMPLES}/eks-demo-ip.snapshot.json"]),
    ("gke-diagnosis", ["diagnose", "--snapshot", f"{EXAMPLES}/gke-demo-ip.snapshot.json"]),
    ("whereabouts-diagnosis", ["diagnose", "--snapshot", f"{EXAMPLES}/whereabouts-stale.snapshot.json"]),
    ("calico-diagnosis", ["diagnose", "--snapshot", f"{EXAMPLES}/calico-borrowing.snapshot.json"]),
    ("eks-plan", ["expand", "--snapshot", f"{EXAMPLES}/eks-demo-ip.snapshot.json", "--plan"]),
    ("gke-plan", ["expand", "--snapshot", f"{EXAMPLES}/gke-demo-ip.snapshot.json", "--plan"]),
    (
        "calico-plan",
        ["expand", "--snapshot", f"{EXAMPLES}/calico-borrowing.snapshot.json", "--plan", "--strategy", "calico-pool"],
    ),
    ("gke-shared-vpc-diagnosis", ["diagnose", "--snapshot", f"{EXAMPLES}/gke-shared-vpc.snapshot.json"]),
]


def make_page(name: str, args: list[str], where: Path) -> tuple[Path, list[NetworkMap]]:
    """Run cidrx with -o html; the page and the maps it should draw (the plan's new range included)."""
    plan_path = where / f"{name}.plan.json"
    extra = ["--out", str(plan_path)] if "--plan" in args else []
    result = CliRunner().invoke(cli, [*args, *extra, "-o", "html"], env={"COLUMNS": None})
    assert result.exit_code in (0, 3), result.output
    page = where / f"{name}.html"
    page.write_text(result.stdout)
    snap = load_snapshot(args[args.index("--snapshot") + 1])
    plan = load_plan(plan_path) if extra else None
    return page, with_plan(app_diagnose.address_maps(snap), plan)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize(("name", "args"), PAGES, ids=[p[0] for p in PAGES])
def test_page_is_self_contained_and_draws_every_range(name: str, args: list[str], tmp_path: Path) -> None:
    page, maps = make_page(name, args, tmp_path)
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>")
    parser = _Tags()
    parser.feed(text)
    tags = parser.tags
    assert not [t for t, _ in tags if t in ("script", "img", "link", "iframe", "object", "embed")]
    assert not [a for _, a in tags if "src" in a or "href" in a]
    assert "url(" not in text and "@import" not in text
    assert sum(1 for t, _ in tags if t == "svg") == len(maps) > 0
    ranges = [a for t, a in tags if t == "g" and "range" in (a.get("class") or "").split()]
    assert len(ranges) == sum(len(m.areas) for m in maps)
    assert [a["data-cidr"] for a in ranges] == [area.cidr for m in maps for area in m.areas]


def test_eks_plan_draws_the_new_block_and_its_subnets(tmp_path: Path) -> None:
    page, _ = make_page(*PAGES[4], tmp_path)
    text = page.read_text()
    assert "planned: new range 100.64.0.0/20" in text
    planned = re.findall(r'<g class="range planned planned" data-cidr="([^"]+)"', text)
    assert planned == ["100.64.0.0/21", "100.64.8.0/21"]
    # The exhausted subnets are marked.
    assert re.findall(r'<g class="range subnet exhausted" data-cidr="([^"]+)"', text) == [
        "10.0.208.0/27",
        "10.0.224.0/27",
    ]


def test_gke_plan_draws_the_new_range_inside_the_network_space(tmp_path: Path) -> None:
    page, maps = make_page(*PAGES[5], tmp_path)
    ten = next(m for m in maps if m.cidr == "10.0.0.0/8")
    planned = [a for a in ten.areas if a.planned]
    assert [a.cidr for a in planned] == ["10.0.16.0/20"]
    assert 'data-cidr="10.0.16.0/20"' in page.read_text()


def test_diagnose_html_page_is_the_renderer_output() -> None:
    from cidrx.cli.diagnose import offline_fixes

    path = str(EXAMPLES / "eks-demo-ip.snapshot.json")
    snap = load_snapshot(path)
    # What diagnose adds for a saved snapshot: its age, and fix commands that plan from the same file.
    d = offline_fixes(dataclasses.replace(app_diagnose.analyze(snap), taken_at=snap.taken_at), path)
    expected = render_html(d, app_diagnose.address_maps(snap))
    result = CliRunner().invoke(
        cli, ["diagnose", "--snapshot", str(EXAMPLES / "eks-demo-ip.snapshot.json"), "-o", "html"]
    )
    assert result.exit_code == 3 and result.stdout == expected


# --- in a real browser ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require("chromium", os.access(CHROMIUM, os.X_OK), f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require("playwright", False, "the playwright package is not installed (pip install '.[test]')")
        return
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keep = os.environ.get("CIDRX_SCREENSHOTS")  # set it to keep the PNGs somewhere to look at
    path = Path(keep) if keep else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize(("name", "args"), PAGES, ids=[p[0] for p in PAGES])
def test_page_in_a_real_browser(name: str, args: list[str], tmp_path: Path, browser: Any, shots: Path) -> None:
    page_file, maps = make_page(name, args, tmp_path)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    console_errors: list[str] = []
    exceptions: list[str] = []
    failed: list[str] = []
    outside: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: exceptions.append(str(e)))
    page.on("requestfailed", lambda r: failed.append(r.url))

    def only_the_file(route: Any) -> None:
        if route.request.url == page_file.as_uri():
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_file)
    try:
        response = page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        assert response is None or response.ok
        assert (console_errors, exceptions, failed, outside) == ([], [], [], [])
        svgs = page.locator("svg.map")
        assert svgs.count() == len(maps)
        for i, m in enumerate(maps):
            svg = svgs.nth(i)
            shapes = svg.locator("g.range")
            assert shapes.count() == len(m.areas)
            titles = [shapes.nth(j).locator("title").text_content() or "" for j in range(shapes.count())]
            for title, area in zip(titles, m.areas, strict=True):
                assert title.startswith(f"{area.name} — {area.cidr}"), (title, area)
                assert ("EXHAUSTED" in title) == area.exhausted
            box = svg.bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 40
            assert box["x"] + box["width"] <= 1100  # fits the window: nothing drawn off to the side
            svg.screenshot(path=str(shots / f"{name}-map-{i}.png"))
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        assert (shots / f"{name}-map-0.png").stat().st_size > 1000
    finally:
        page.close()


def test_a_missing_browser_skips_or_fails_as_cidrx_require_tools_says(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("1", "chromium,promtool"):
        monkeypatch.setenv(ENV, value)
        with pytest.raises(pytest.fail.Exception, match=ENV):
            require("chromium", False, "nothing here")
    monkeypatch.setenv(ENV, "promtool")
    with pytest.raises(pytest.skip.Exception, match=ENV):
        require("chromium", False, "nothing here")
    monkeypatch.delenv(ENV)
    with pytest.raises(pytest.skip.Exception):
        require("chromium", False, "nothing here")
    require("chromium", True, "there")  # present: nothing happens


def test_fleet_mode_refuses_html_with_one_line() -> None:
    result = CliRunner().invoke(cli, ["diagnose", "--k8s", "--context", "a", "--context", "b", "-o", "html"])
    assert result.exit_code == 2 and "-o html maps one cluster" in result.output


@pytest.mark.parametrize(("index", "exhausted"), [(0, False), (2, True), (3, True)])
def test_a_pool_with_nothing_left_is_marked_exhausted(index: int, exhausted: bool, tmp_path: Path) -> None:
    """The Whereabouts pool holds every address it may hand out; every block of the Calico pool is
    claimed; the EKS VPC block still has room (its full subnets are marked one by one instead)."""
    page, maps = make_page(*PAGES[index], tmp_path)
    assert ('<span class="badge">EXHAUSTED</span>' in page.read_text()) is exhausted
    assert any(m.exhausted for m in maps) is exhausted


# Every label of the maps against its own box and every other label, every range and its labels inside the range
# that holds it, sibling boxes of one row as wide as their sizes rank, every range's address shown whole (SVG user
# units, measured in the browser); the page and its tables not wider than the window; every capacity row one
# line high.
_GEOMETRY = """() => {
  const doc = document.documentElement;
  const problems = [];
  const inside = (r, p) => r.x >= p.x - 0.5 && r.y >= p.y - 0.5 && r.x + r.width <= p.x + p.width + 0.5
    && r.y + r.height <= p.y + p.height + 0.5;
  const meet = (a, b) => a.x < b.x + b.width - 0.5 && b.x < a.x + a.width - 0.5
    && a.y < b.y + b.height - 0.5 && b.y < a.y + a.height - 0.5;
  for (const svg of document.querySelectorAll('svg.map')) {
    const boxes = [];
    const labels = [];
    const frames = {};
    for (const g of svg.querySelectorAll('g.range, g.gap')) {
      const r = g.querySelector('rect').getBBox();
      const id = g.dataset.cidr || g.dataset.first;
      const own = [];
      boxes.push({r, id, parent: g.dataset.in || '', size: Number(g.dataset.size), own});
      frames[id] = r;
      for (const t of g.querySelectorAll('text')) {
        const b = t.getBBox();
        labels.push({b, text: t.textContent});
        own.push({b, text: t.textContent});
        if (b.x < r.x - 0.5 || b.x + b.width > r.x + r.width + 0.5) {
          problems.push(`label "${t.textContent}" runs out of its box ${id}`);
        }
      }
      const address = g.querySelector('text');
      if (g.classList.contains('range') && (!address.textContent || address.textContent.endsWith('\u2026'))) {
        problems.push(`${id} does not show its address whole: "${address.textContent}"`);
      }
    }
    for (const b of boxes) {
      if (!b.parent) continue;
      if (!inside(b.r, frames[b.parent])) problems.push(`${b.id} is not drawn inside ${b.parent}`);
      for (const l of b.own) {
        if (!inside(l.b, frames[b.parent])) problems.push(`label "${l.text}" of ${b.id} is not inside ${b.parent}`);
      }
    }
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (a.parent !== b.parent || a.r.y !== b.r.y) continue;
      if (meet(a.r, b.r)) problems.push(`boxes ${a.id} and ${b.id} overlap`);
      const [big, small] = a.size >= b.size ? [a, b] : [b, a];
      if (big.size > small.size && big.r.width < small.r.width - 0.5) {
        problems.push(`${big.id} (${big.size}) drawn narrower than ${small.id} (${small.size})`);
      }
    }
    for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
      if (meet(labels[i].b, labels[j].b)) problems.push(`labels "${labels[i].text}" and "${labels[j].text}" overlap`);
    }
  }
  for (const d of document.querySelectorAll('div.wide')) {
    if (d.scrollWidth > d.clientWidth) problems.push(`a table scrolls sideways: ${d.scrollWidth} > ${d.clientWidth}`);
  }
  const rows = Array.from(document.querySelectorAll('table.capacity tbody tr'), r => r.getBoundingClientRect().height);
  return {scroll: doc.scrollWidth, client: doc.clientWidth, problems, rows};
}"""

# The tallest a capacity row may be: one line of 13 px text and its padding (a wrapped cell makes it 45 px).
MAX_ROW_PX = 30
WIDTHS = (760, 1100, 1600)
# Every bundled example's diagnosis, and the plans.
GEOMETRY_PAGES = [
    *(
        (f"{p.name.removesuffix('.snapshot.json')}-diagnosis", ["diagnose", "--snapshot", str(p)])
        for p in sorted(EXAMPLES.glob("*.snapshot.json"))
    ),
    *((name, args) for name, args in PAGES if "--plan" in args),
]


def test_the_geometry_pages_are_every_example() -> None:
    examples = {p.name.removesuffix(".snapshot.json") for p in EXAMPLES.glob("*.snapshot.json")}
    assert len(examples) >= 15
    assert {n.removesuffix("-diagnosis") for n, _ in GEOMETRY_PAGES if n.endswith("-diagnosis")} == examples


@pytest.mark.parametrize(("name", "args"), GEOMETRY_PAGES, ids=[p[0] for p in GEOMETRY_PAGES])
def test_no_horizontal_overflow_no_label_overlap_ranges_inside_their_parent_and_compact_rows(
    name: str, args: list[str], tmp_path: Path, browser: Any, shots: Path
) -> None:
    page_file, _maps = make_page(name, args, tmp_path)
    page = browser.new_page(viewport={"width": WIDTHS[0], "height": 900})
    try:
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            found = page.evaluate(_GEOMETRY)
            assert found["scroll"] <= found["client"], f"horizontal overflow at {width} px: {found}"
            assert found["problems"] == [], (width, found["problems"][:5])
            assert max(found["rows"], default=0) <= MAX_ROW_PX, (width, found["rows"])
            if os.environ.get("CIDRX_SCREENSHOTS"):
                page.screenshot(path=str(shots / f"{name}-{width}px.png"), full_page=True)
    finally:
        page.close()


def test_fixes_are_code_blocks_and_exhausted_pools_use_the_legends_red() -> None:
    snap = load_snapshot(EXAMPLES / "whereabouts-stale.snapshot.json")
    d = app_diagnose.analyze(snap)
    page = render_html(d, app_diagnose.address_maps(snap))
    assert re.search(r"<pre><code>cidrx reclaim [^<]*--ipam whereabouts --plan --out reclaim.json</code></pre>", page)
    assert "<pre><code>cidrx reclaim --apply reclaim.json</code></pre>" in page
    assert "`" not in page
    assert "#e8833a" not in page.split("<h2>Address maps</h2>", 1)[1].split("<h2>", 1)[0].split("</p>", 1)[1]


def test_boxes_are_drawn_to_scale_with_a_minimum_width() -> None:
    from cidrx.model.netmap import Area
    from cidrx.render.html import MIN_W, WIDTH, map_svg

    # A /28 beside a /16 in a /8: the /16 takes what is left after the /28's and the gaps' minimums.
    m = NetworkMap(
        "x",
        "x",
        "10.0.0.0/8",
        (
            Area("10.0.0.0/16", "big", "subnet", 65536, used=0),
            Area("10.1.0.0/28", "small", "subnet", 16, used=0),
        ),
    )
    svg = map_svg(m)
    widths = {c: float(w) for c, w in re.findall(r'data-cidr="([^"]+)".*?<rect[^>]* width="([0-9.]+)"', svg)}
    assert widths["10.1.0.0/28"] == MIN_W
    assert widths["10.0.0.0/16"] == MIN_W  # its share of a /8 (1/256) is below the minimum too
    gaps = [float(w) for w in re.findall(r'<g class="gap"[^>]*>.*?<rect[^>]* width="([0-9.]+)"', svg)]
    assert max(gaps) > WIDTH - 3 * MIN_W - 3 * 4  # the rest of the /8 is one wide unallocated box


def test_calico_leaked_and_borrowed_addresses_are_drawn_inside_their_block() -> None:
    snap = load_snapshot(EXAMPLES / "calico-borrowing.snapshot.json")
    (pool,) = [m for m in app_diagnose.address_maps(snap) if m.kind == "calico-pool"]
    singles = {a.cidr: a.role for a in pool.areas if a.size == 1}
    assert singles == {
        "10.0.0.41/32": "borrowed",
        "10.0.0.42/32": "borrowed",
        "10.0.0.43/32": "borrowed",
        "10.0.0.44/32": "stale",
    }
    page = render_html(app_diagnose.analyze(snap), [pool])
    assert page.count('data-in="10.0.0.0/26"') == 4
    assert "borrowed (pod on another node than its block&#x27;s)" in page


def test_a_space_holding_only_routes_elsewhere_is_context_not_red() -> None:
    snap = load_snapshot(EXAMPLES / "gke-shared-vpc.snapshot.json")
    (space,) = [m for m in app_diagnose.address_maps(snap) if m.cidr == "192.168.0.0/16"]
    assert [a.role for a in space.areas] == ["route"] and not space.exhausted
    page = render_html(app_diagnose.analyze(snap), [space])
    maps = page.split("<h2>Address maps</h2>", 1)[1].split("<h2>", 1)[0]
    assert "routes to other networks only" in maps and "EXHAUSTED" not in maps
    drawn = maps.split("<svg", 1)[1]
    assert "#d64541" not in drawn and "#e8833a" not in drawn and 'class="range route"' in drawn


def test_ranges_that_do_not_fit_side_by_side_wrap_onto_rows_inside_their_small_parent() -> None:
    from cidrx.model.netmap import Area
    from cidrx.render.html import MIN_ONE, map_svg

    # A /26 pool block (drawn at its minimum width in a /16) holding eight leaked addresses.
    leaked = tuple(Area(f"10.0.0.{i}/32", f"default/pod-{i}", "stale", 1, used=1) for i in range(1, 9))
    m = NetworkMap("x", "x", "10.0.0.0/16", (Area("10.0.0.0/26", "node-1", "block", 64, used=8), *leaked))
    svg = map_svg(m)
    frames = {
        c: tuple(float(v) for v in xywh)
        for c, *xywh in re.findall(
            r'data-cidr="([^"]+)"[^>]*>(?:<title>[^<]*</title>)(?:<rect(?! class="frame")[^>]*/>)*'
            r'<rect class="frame" x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)"/>',
            svg,
        )
    }
    px, py, pw, ph = frames["10.0.0.0/26"]
    kids = [frames[a.cidr] for a in leaked]
    assert all(px <= x and x + w <= px + pw and py <= y and y + h <= py + ph for x, y, w, h in kids)
    assert len({y for _, y, _, _ in kids}) > 1  # stacked in rows, not squeezed into one
    assert all(w >= MIN_ONE for _, _, w, _ in kids)  # each wide enough for ".41" over "borrowed"


def test_a_diagnosis_page_leads_with_the_terminals_verdict_then_findings_worst_first() -> None:
    from cidrx.render.table import verdict

    snap = load_snapshot(EXAMPLES / "calico-borrowing.snapshot.json")
    d = app_diagnose.analyze(snap)
    # Findings in the diagnosis' own order, an info one first: the page still shows the worst first.
    d = dataclasses.replace(d, findings=tuple(reversed(d.findings)))
    page = render_html(d, app_diagnose.address_maps(snap))
    body = page.split("<body>", 1)[1]
    sev, line = verdict(d, counts=False)
    assert sev is not None and body.startswith(f"<p class='verdict {sev.value}'>{line}</p><h1>")
    assert body.index("<h2>Findings") < body.index("<h2>Address maps") < body.index("<h2>Capacity")
    shown = re.findall(r'<div class="finding (\w+)">', body)
    order = ["critical", "warning", "info"]
    assert shown == sorted(shown, key=order.index) and shown[0] == "critical"
