"""`cidrx forecast`: when each range of a target runs out, from the history Prometheus keeps of cidrx's series
(cidrx/app/forecast.py). Needs Prometheus only: the TARGET options just name the `target` label to select.
"""

from __future__ import annotations

import click

from cidrx.cli.options import OutputFormat, TargetOptions, resolve_target, target_options

# cidrx.render.forecast.FORMATS, literal here so that --help imports nothing.
FORMATS = ("table", "json", "html")


@click.command(short_help="Days until each range runs out, from Prometheus history (exit 3 within --fail-within).")
@target_options
@click.option(
    "--prometheus",
    "url",
    required=True,
    envvar="CIDRX_PROMETHEUS",
    metavar="URL",
    help="Base URL of the Prometheus that scrapes cidrx, e.g. http://prometheus:9090.",
)
@click.option("--horizon", default="30d", show_default=True, help="How far ahead to project (e.g. 30d, 12w).")
@click.option("--history", default="14d", show_default=True, help="How much history to fit (e.g. 14d, 36h).")
@click.option("--fail-within", default=None, metavar="DURATION", help="Exit 3 when a range runs out within it.")
@click.option("-o", "--output", type=OutputFormat(FORMATS), default="table", show_default=True, help="Output format.")
def forecast(target: TargetOptions, url: str, horizon: str, history: str, fail_within: str | None, output: str) -> int:
    """Forecast when each address space of TARGET runs out, from the history of its cidrx_capacity_*
    series in Prometheus (written by `cidrx exporter` or `diagnose -o prometheus`).

    Each range's use is fitted robustly (Theil–Sen; after the last step such as a batch of pods or a new
    range, and the window used is shown) and projected to --horizon, with a 95 % band. No cloud
    credentials are needed: TARGET only names the series' `target` label. Exit 2 when Prometheus has no
    cidrx series for it, 6 when Prometheus cannot be reached, 3 when a range runs out within --fail-within.

    \b
      cidrx forecast --eks --region R --cluster C --prometheus http://prometheus:9090
      cidrx forecast --k8s --context prod --prometheus http://prom:9090 --fail-within 7d -o json
    """
    from cidrx.app import forecast as app
    from cidrx.render import forecast as render
    from cidrx.render.term import stdout_term

    horizon_s = app.parse_duration(horizon, "--horizon")
    history_s = app.parse_duration(history, "--history")
    fail_s = app.parse_duration(fail_within, "--fail-within") if fail_within else None
    label = resolve_target(target).label()
    doc, ranges = app.forecast(label, url, horizon_s, history_s)
    if output == "json":
        click.echo(render.render_json(doc), nl=False)
    elif output == "html":
        click.echo(render.render_html(doc), nl=False)
    else:
        click.echo(render.render_table(doc, stdout_term()), nl=False)
    return 3 if fail_s is not None and app.runs_out_within(ranges, fail_s) else 0
