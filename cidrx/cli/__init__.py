"""The `cidrx` command: a click group with one module per command, run inside the single error boundary.

`CidrxGroup.main` wraps click itself, so the console script, `python -m cidrx` and click's test runner all
go through `boundary.run` and get the same exit codes (docs/cli.md).
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import click

from cidrx import __version__
from cidrx.cli import boundary
from cidrx.cli.diagnose import diagnose
from cidrx.cli.expand import expand
from cidrx.cli.exporter import exporter
from cidrx.cli.forecast import forecast
from cidrx.cli.permissions import permissions
from cidrx.cli.reclaim import reclaim
from cidrx.cli.rollback import rollback
from cidrx.cli.snapshot import snapshot
from cidrx.errors import InvalidInput

EXIT_CODES_HELP = """\b
Exit codes:
  0  success; diagnose found nothing at or above --fail-on
  1  internal error (a bug: the message says where to report it)
  2  usage or invalid input (bad flag or CIDR, unreadable/corrupt/edited file)
  3  diagnose found problems at or above --fail-on (default: critical)
  4  plan is stale: the cloud or cluster changed since it was made; nothing applied
  5  apply stopped partway; running the same command again resumes
  6  access: credentials missing, permission denied, target not found or unreachable
  7  the cloud or cluster kept failing (5xx, throttling) after every retry; nothing is wrong with the input: retry later
  8  another apply or rollback of the same plan holds its lock (the message names it); or use --wait-for-lock

\b
Every TARGET option can also be set as CIDRX_<OPTION>, e.g. CIDRX_EKS=1
CIDRX_REGION=ap-southeast-2 CIDRX_CLUSTER=demo-ip.
"""


# Loggers of the libraries cidrx drives, kept at INFO or above whatever -v says (see `cli`).
SDK_LOGGERS = (
    "botocore",
    "boto3",
    "s3transfer",
    "urllib3",
    "requests",
    "google",
    "httpx",
    "httpcore",
    "httpx2",
    "httpcore2",
    "lightkube",
    "azure",
)


GLOBAL_FLAGS = frozenset({"-v", "--verbose", "-q", "--quiet", "--no-color", "--wide"})


def _is_global_flag(arg: str) -> bool:
    return arg in GLOBAL_FLAGS or (len(arg) > 2 and arg[0] == "-" and set(arg[1:]) == {"v"})


def hoist_global_options(argv: list[str], commands: Mapping[str, object]) -> list[str]:
    """`argv` with the global flags (-v, -q, --no-color, --wide) given after the subcommand moved before it, so
    `cidrx diagnose ... -v` works like `cidrx -v diagnose ...` (no subcommand has options of these names)."""
    command_at = next((i for i, arg in enumerate(argv) if arg in commands), None)
    if command_at is None:
        return argv
    end = argv.index("--", command_at) if "--" in argv[command_at:] else len(argv)
    moved = [a for a in argv[command_at + 1 : end] if _is_global_flag(a)]
    if not moved:
        return argv
    rest = [a for a in argv[command_at + 1 : end] if not _is_global_flag(a)]
    return [*argv[:command_at], *moved, argv[command_at], *rest, *argv[end:]]


class CidrxGroup(click.Group):
    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = hoist_global_options(list(sys.argv[1:] if args is None else args), self.commands)
        # Verbosity must be known even when parsing fails before the group callback runs.
        boundary.set_verbosity(1 if any(a in ("-v", "--verbose") or a.startswith("-vv") for a in argv) else 0)
        code = boundary.run(
            lambda: super(CidrxGroup, self).main(
                argv, prog_name or "cidrx", complete_var, standalone_mode=False, **extra
            )
        )
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                raise boundary.ReaderGone() from exc
            raise


def _examples() -> str:
    """The group's help: what it is for and one example per command, the IPAM one named by the registry."""
    from cidrx import registry

    ipam = next((s.owner for s in registry.strategies() if s.reclaim), "IPAM")
    examples = [
        ("cidrx diagnose --eks --region R --cluster C", "what is full, and why"),
        ("cidrx diagnose --snapshot FILE", "the same, offline"),
        ("cidrx expand --eks ... --plan", "a reviewable fix plan"),
        ("cidrx expand --apply PLAN.json --yes", "carry it out (resumable)"),
        ("cidrx rollback PLAN.json --yes", "undo what that apply did"),
        (f"cidrx reclaim --k8s --ipam {ipam} --plan", "release stale in-cluster IPs"),
        ("cidrx snapshot --eks ... --out FILE", "everything diagnose reads"),
        ("cidrx exporter --k8s --interval 120", "the same as Prometheus metrics"),
        ("cidrx forecast --k8s --prometheus URL", "when each range runs out"),
    ]
    width = max(len(command) for command, _ in examples) + 3
    lines = [f"  {command.ljust(width)}{what}" for command, what in examples]
    return "Find why Kubernetes pods cannot get IP addresses, then plan and apply the fix.\n\n\b\n" + "\n".join(lines)


@click.group(
    cls=CidrxGroup,
    help=_examples(),
    epilog=EXIT_CODES_HELP,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, "--version", prog_name="cidrx", message="%(prog)s %(version)s")
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="More detail on stderr (each retry, with its wait); -v also shows tracebacks of bugs. "
    "Like -q, --no-color and --wide, it may also come after the subcommand.",
)
@click.option("-q", "--quiet", is_flag=True, help="Quieter stderr: log messages below errors are dropped.")
@click.option("--no-color", is_flag=True, help="No colour in terminal output (as NO_COLOR=1 does).")
@click.option(
    "--wide",
    is_flag=True,
    help="Table output with every column and every line of evidence, however wide the lines get.",
)
def cli(verbose: int, quiet: bool, no_color: bool, wide: bool) -> None:
    import logging
    import os

    from cidrx.render import term

    term.set_no_color(no_color)
    term.set_wide(wide)
    if no_color:
        os.environ["NO_COLOR"] = "1"  # the convention every renderer follows (https://no-color.org)
    if quiet and verbose:
        raise InvalidInput("-q and -v contradict each other; choose one")
    boundary.set_verbosity(verbose)
    level = (
        logging.ERROR if quiet else logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    )
    # One handler of our own on the current stderr, replaced on every run (a test runner calls `cli` many
    # times in one process, each with another stderr; basicConfig would keep writing to the first).
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "cidrx", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cidrx: %(levelname)s: %(name)s: %(message)s"))
    handler.cidrx = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    # The SDKs' debug logs print whole requests: signed AWS requests carry X-Amz-Security-Token, OAuth
    # refreshes carry refresh tokens, Kubernetes requests bearer tokens. -vv is for cidrx's own detail.
    # Without -v their warnings stay quiet too: they are about retries the SDK made itself (azure-core's
    # "Incomplete download"), and cidrx says in its own line what finally failed.
    for name in SDK_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.INFO if verbose else logging.ERROR))


cli.add_command(diagnose)
cli.add_command(snapshot)
cli.add_command(expand)
cli.add_command(reclaim)
cli.add_command(rollback)
cli.add_command(permissions)
cli.add_command(exporter)
cli.add_command(forecast)


# Allocations between young-generation collections, and collections between older ones (CPython's
# defaults: 700, 10, 10). cidrx builds one large, acyclic tree of records per run (60,000 pods, as many
# IPAM handles ...); at the defaults the collector walks that growing tree again and again, which cost
# a third of a large diagnose's wall time (docs/performance.md). Cycles are still collected, just less often.
GC_THRESHOLDS = (100_000, 50, 100)


def tune_gc() -> None:
    """Set the process's garbage-collection thresholds for cidrx's allocation pattern (GC_THRESHOLDS)."""
    import gc

    gc.set_threshold(*GC_THRESHOLDS)


def main() -> None:
    """Console-script entry point."""
    tune_gc()
    cli.main(prog_name="cidrx")
