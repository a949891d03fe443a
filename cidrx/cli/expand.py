"""`cidrx expand`: make a reviewable plan that adds pod address space (`--plan`), or carry one out
(`--apply PLAN.json`).

The two halves are separate on purpose: a plan is a file reviewed in a pull request, and apply refuses
anything but that exact file (digest), against anything but the estate it was made from (drift check on
a fresh snapshot), and without an explicit yes (a prompt on a terminal, `--yes` in a pipeline).
"""

from __future__ import annotations

import ipaddress
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from cidrx import registry
from cidrx.cli import boundary
from cidrx.cli.diagnose import get_snapshot, reading_status
from cidrx.cli.options import OutputFormat, RegisteredChoice, TargetOptions, check_matches, target_options
from cidrx.cli.snapshot import write_atomically
from cidrx.errors import CidrxError, InvalidInput
from cidrx.model import files
from cidrx.render import PLAN_FORMATS, render_plan

if TYPE_CHECKING:
    from cidrx.model.options import PlanOptions
    from cidrx.model.plan import Plan
    from cidrx.model.snapshot import Snapshot

# From the registry, which imports nothing heavy: `--help` loads no provider.
STRATEGIES = registry.expand_strategies()


def _strategy_help() -> str:
    """--strategy's help: each provider's strategies, then those of the in-cluster IPAMs, as declared."""
    parts = [f"{p.title}: {', '.join(p.strategies)}" for p in registry.providers() if p.strategies]
    for spec in registry.ipams():
        own = [s for s in spec.strategies if s in STRATEGIES]
        if own:
            parts.append(f"any cluster running {spec.title}: {', '.join(own)}")
    return f"How to add space. {'; '.join(parts)}. Without it, the target's provider picks one for the cluster."


STRATEGY_HELP = _strategy_help()


def default_plan_path(plan: Plan) -> str:
    return f"cidrx-plan-{plan.target.cluster}.json"


def stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, AttributeError):  # closed or replaced stdin
        return False


def _check_cidr(cidr: str) -> None:
    if not cidr.strip():  # an unset variable in a script (`--cidr "$CIDR"`) must not mean "choose one for me"
        raise InvalidInput(
            "--cidr is empty: give a range such as 100.64.0.0/20, or leave --cidr out and cidrx chooses one"
        )
    if re.fullmatch(r"\d{1,3}(?:\.\d{1,3}){3}", cidr.strip()):
        raise InvalidInput(
            f"--cidr {cidr} is an address, not a range: a CIDR needs a prefix length (/N) saying how big it is",
            hint="write it as NETWORK/N, e.g. 100.64.0.0/20 (4,096 addresses)",
        )
    try:
        ipaddress.IPv4Network(cidr, strict=True)
    except ValueError as exc:
        raise InvalidInput(f"--cidr {cidr}: {exc}; give an IPv4 network such as 100.64.0.0/20") from None


def _refuse_to_orphan_a_journal(path: str, plan: Plan) -> None:
    """Refuse to write `plan` over another plan at `path` whose own journal is beside it.

    The journal only counts for the plan file it sits beside (its digest must match): replacing that file
    would leave the record of what the old plan created pointing at nothing, and resume, the journal's
    import ids and the plan tag would no longer lead anywhere from here.
    """
    from cidrx.engine.journal import Journal, journal_path
    from cidrx.model.plan import load_plan

    journal_file = journal_path(path)
    if not journal_file.exists() or not Path(path).is_file():
        return
    try:
        existing = load_plan(path)
        journal = Journal.open(path, existing)
    except InvalidInput:
        return  # not a readable plan, or the journal is not its own: nothing of this file's to orphan
    if existing.digest == plan.digest or not journal.events:
        return
    if existing.strategy in RECLAIM_STRATEGIES:
        way = f"finish it with: cidrx reclaim --apply {path}"
    else:
        way = f"adopt what it applied with: cidrx expand --apply {path} --emit terraform"
    raise InvalidInput(
        f"{path} holds plan {existing.plan_id}, applied with its journal {journal_file} beside it; writing plan "
        f"{plan.plan_id} over it would orphan that journal: choose another --out, or {way}"
    )


def _warn_foreign_journal(path: str, plan: Plan) -> None:
    from cidrx.engine.journal import Journal, journal_path

    if not journal_path(path).exists():
        return
    try:
        Journal.open(path, plan)
    except InvalidInput as exc:
        click.echo(f"cidrx: warning: {exc.message}; apply will refuse until it is moved", err=True)


def make(
    target: TargetOptions,
    snapshot_path: str | None,
    out: str | None,
    options: PlanOptions,
    output: str,
    emit: str | None = None,
) -> int:
    from cidrx.app.plan import make_plan

    if options.cidr is not None:
        _check_cidr(options.cidr)
    if out and not files.is_stdout(out) and out.endswith(".tf"):
        stem = out[: -len(".tf")]
        raise InvalidInput(
            f"--out {out}: --out names the plan's JSON file, not the Terraform",
            hint=f"use --out {stem}.json --emit terraform: the plan goes to {stem}.json and its HCL to {stem}.tf",
        )
    if out:
        files.check_writable(out)  # a device, FIFO or directory is refused before anything is read
        if emit is not None and not files.is_stdout(out):
            files.check_writable(terraform_path(out))
    snap = get_snapshot(target, snapshot_path)
    plan = make_plan(snap, options)
    if emit is None:
        return write_plan(plan, out, output, "expand", snap)
    if emit != "terraform":
        return make_and_emit(plan, snap, out, output, emit)
    if out is not None and files.is_stdout(out):  # the HCL instead of the plan's JSON: nothing is saved
        click.echo(terraform_text(plan, None), nl=False)
        return 0
    path = out or default_plan_path(plan)
    hcl = terraform_text(plan, path)  # before anything is written: a plan it cannot express writes nothing
    code = write_plan(plan, path, output, "expand", snap)
    write_atomically(terraform_path(path), hcl)
    click.echo(f"cidrx: Terraform for plan {plan.plan_id} written to {terraform_path(path)}", err=True)
    return code


def make_and_emit(plan: Plan, snap: Snapshot, out: str | None, output: str, emit: str) -> int:
    """`expand --plan --emit NAME` for a format the plan's owner declares (`emits`): the plan's JSON, and beside it
    (its path with the format's suffix instead of .json) the plan in that format; with --out -, only the latter."""
    found = registry.plan_emitter(plan.strategy, emit)
    if found is None:
        raise InvalidInput(f"--emit {emit}: {plan.strategy} plans have no {emit} form", hint="drop --emit")
    suffix, path = found
    text: str = registry.load(path)(plan)  # before anything is written: a plan it cannot express writes nothing
    if out is not None and files.is_stdout(out):
        click.echo(text, nl=False)
        return 0
    plan_path = out or default_plan_path(plan)
    code = write_plan(plan, plan_path, output, "expand", snap)
    beside = (plan_path[: -len(".json")] if plan_path.endswith(".json") else plan_path) + suffix
    write_atomically(beside, text)
    click.echo(f"cidrx: {emit} for plan {plan.plan_id} written to {beside}", err=True)
    return code


def terraform_path(plan_path: str) -> str:
    """Where `--emit terraform` writes: the plan's path with .json replaced by (or else followed by) .tf."""
    return (plan_path[: -len(".json")] if plan_path.endswith(".json") else plan_path) + ".tf"


def terraform_text(plan: Plan, plan_path: str | None, how: str = "cidrx expand --plan --emit terraform") -> str:
    """The plan as HCL, with import blocks for what the journal beside `plan_path` says an apply created
    (only a journal of this very plan counts; another plan's is ignored, as write_plan warns)."""
    from cidrx.engine.journal import Journal, journal_path
    from cidrx.render.terraform import render_terraform

    outputs: dict[str, dict[str, object]] = {}
    if plan_path and journal_path(plan_path).exists():
        try:
            journal = Journal.open(plan_path, plan)
        except InvalidInput:
            return render_terraform(plan, outputs, generated_by=how)
        for step in plan.steps:
            found = journal.outputs_of(step.id)
            if found:
                outputs[step.id] = found
    return render_terraform(plan, outputs, generated_by=how)


def plan_text(plan: Plan, output: str, snapshot: Snapshot | None) -> str:
    """`plan` as `output`; html draws the plan's new range into the maps of the snapshot it was made from."""
    from cidrx.render.term import stdout_term

    if output != "html":
        return render_plan(plan, output, stdout_term())
    from cidrx.app.diagnose import address_maps, analyze
    from cidrx.render.html import render_html

    if snapshot is None:
        raise InvalidInput("-o html needs the snapshot the plan is made from")
    return render_html(analyze(snapshot), address_maps(snapshot), plan)


def write_plan(plan: Plan, out: str | None, output: str, command: str, snapshot: Snapshot | None = None) -> int:
    """Print `plan` in `output` format and save it to `out` (default beside the cwd; `-`: JSON on stdout)."""
    from cidrx.model import codec

    if out is not None and files.is_stdout(out):
        click.echo(render_plan(plan, "json"), nl=False)
        return 0
    path = out or default_plan_path(plan)
    _refuse_to_orphan_a_journal(path, plan)
    text = plan_text(plan, output, snapshot)
    write_atomically(path, codec.dumps(plan))
    click.echo(text, nl=False)
    _warn_foreign_journal(path, plan)
    click.echo(
        f"cidrx: plan {plan.plan_id} written to {path}; review it, then: cidrx {command} --apply {path}", err=True
    )
    return 0


RECLAIM_STRATEGIES = registry.reclaim_strategies()


def load_for_apply(target: TargetOptions, plan_path: str, command: str) -> Plan:
    """The plan at `plan_path`, checked against the target flags and the command it belongs to."""
    from cidrx.app.owners import require_supported
    from cidrx.model.plan import load_plan

    plan = load_plan(plan_path)
    check_matches(target, plan.target, f"plan {plan_path}")
    require_supported(plan.target)
    belongs = "reclaim" if plan.strategy in RECLAIM_STRATEGIES else "expand"
    if belongs != command:
        raise InvalidInput(f"{plan_path} is a {plan.strategy} plan; apply it with: cidrx {belongs} --apply {plan_path}")
    return plan


APPLY_FORMATS = ("table", "json")


def wait_for_lock_option(when: str = "With --apply: w") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--wait-for-lock, its help led by when it applies (`expand`/`reclaim`: with --apply; `rollback`: always)."""
    return click.option(
        "--wait-for-lock",
        type=click.FloatRange(min=0),
        metavar="SECONDS",
        help=f"{when}hen another run holds this plan's lock, wait up to SECONDS for it instead of "
        "refusing at once (exit 8).",
    )


WAIT_FOR_LOCK = wait_for_lock_option()


def apply(
    target: TargetOptions,
    plan_path: str,
    yes: bool,
    command: str = "expand",
    plan: Plan | None = None,
    output: str = "table",
    wait_for_lock: float | None = None,
) -> int:
    """Carry out the plan at `plan_path` (shared by `expand --apply` and `reclaim --apply`); `plan` is that
    file already loaded with `load_for_apply`, if the caller did. After the last step a fresh snapshot
    shows whether it worked (cidrx.engine.verify); it is printed and recorded in the journal."""
    from cidrx.app.apply import ApplySession
    from cidrx.render.progress import make_progress
    from cidrx.render.table import render_plan as plan_table
    from cidrx.render.table import render_results
    from cidrx.render.term import stderr_term, stdout_term

    if output not in APPLY_FORMATS:
        raise InvalidInput(f"-o {output} is for plans; an apply reports as {' or '.join(APPLY_FORMATS)}")
    if plan is None:
        plan = load_for_apply(target, plan_path, command)
    if not yes:
        if not stdin_is_terminal():
            raise InvalidInput(
                "refusing to apply without --yes: stdin is not a terminal",
                hint=f"review the plan, then run: cidrx {command} --apply {plan_path} --yes",
            )
        click.echo(plan_table(plan, stderr_term()), err=True)
        if not click.confirm(f"Apply plan {plan.plan_id} to {plan.target.label()}?", default=False, err=True):
            raise InvalidInput("apply cancelled at the prompt; nothing was changed")
    progress = make_progress(sys.stderr)
    with ApplySession(plan, plan_path, target, progress) as session:
        applied = session.apply(wait_for_lock, reading=reading_status, writing=boundary.applying)
    outcomes, verification, unverified = applied.outcomes, applied.verification, applied.unverified
    rows = [(o.step_id, o.status, dict(o.outputs)) for o in outcomes]
    if output == "json":
        from cidrx.engine.verify import verification_doc
        from cidrx.model import codec
        from cidrx.render.jsonout import apply_doc

        doc = verification_doc(verification) if verification is not None else None
        click.echo(codec.dumps(apply_doc(plan, rows, doc, unverified)), nl=False)
        return 0
    click.echo(render_results(rows, plan.notes, stdout_term(), verification, unverified), nl=False)
    if applied.follow_up:
        click.echo(f"cidrx: nodes are left in full space; plan their migration next: {applied.follow_up}", err=True)
    return 0


def apply_and_emit(
    target: TargetOptions, plan_path: str, yes: bool, output: str = "table", wait_for_lock: float | None = None
) -> int:
    """`expand --apply PLAN --emit terraform`: apply, then write the .tf beside the plan with import blocks
    for what the journal recorded, also when the apply stopped partway (its exit code is kept) or was
    refused, so what was created so far can be adopted."""
    plan = load_for_apply(target, plan_path, "expand")
    how = f"cidrx expand --apply {plan_path} --emit terraform"
    terraform_text(plan, plan_path, how)  # a plan Terraform cannot express is refused before anything is applied
    tf = terraform_path(plan_path)
    try:
        code = apply(target, plan_path, yes, plan=plan, output=output, wait_for_lock=wait_for_lock)
    except BaseException:
        try:
            write_atomically(tf, terraform_text(plan, plan_path, how))
        except CidrxError as exc:  # the apply's own error is the one to report and exit with
            click.echo(f"cidrx: warning: no Terraform written: {exc.message}", err=True)
        else:
            click.echo(f"cidrx: Terraform with import blocks for what was applied so far written to {tf}", err=True)
        raise
    write_atomically(tf, terraform_text(plan, plan_path, how))
    click.echo(f"cidrx: Terraform with import blocks for what was applied written to {tf}", err=True)
    return code


@click.command(short_help="Plan (--plan) or apply (--apply) more pod address space.")
@target_options
@click.option("--plan", "plan_mode", is_flag=True, help="Make a plan and write it to --out (changes nothing).")
@click.option("--apply", "apply_path", metavar="PLAN.json", help="Carry out a plan made with --plan.")
@click.option("--snapshot", "snapshot_path", metavar="FILE", help="With --plan: plan from a saved snapshot (offline).")
@click.option(
    "--out",
    metavar="PLAN.json",
    help="With --plan: where to write the plan's JSON [default: cidrx-plan-<cluster>.json]; - prints its JSON "
    "instead. Never a .tf file: --emit terraform writes the HCL beside it (PLAN.json -> PLAN.tf).",
)
@click.option(
    "--strategy",
    type=RegisteredChoice(registry.expand_strategies),
    help=STRATEGY_HELP,
)
@click.option("--cidr", metavar="CIDR", help="Range to add (default: the first free one that is allowed).")
@click.option("--add-nodes", type=click.IntRange(min=1), metavar="N", help="Nodes the new space must hold.")
@click.option(
    "--max-pods-per-node",
    type=click.IntRange(min=8, max=256),
    metavar="M",
    help="GKE: max pods per node of the new pool (sets the per-node block) [default: the template pool's].",
)
@click.option("--pool-name", "--nodegroup-name", "pool_name", metavar="NAME", help="Name of the new node pool/group.")
@click.option(
    "--template-pool",
    "--template-nodegroup",
    "template",
    metavar="NAME",
    help="Node pool/group whose settings the new one copies [default: the largest].",
)
@click.option("--allow-class-e", is_flag=True, help="GKE: allow 240.0.0.0/4 when no private space is free.")
@click.option(
    "--force",
    is_flag=True,
    help="With --plan: plan another expansion although a plan cidrx applied still has room (the plan records why).",
)
@click.option(
    "-o",
    "--output",
    type=OutputFormat(PLAN_FORMATS),
    default="table",
    show_default=True,
    help="Plan output format; with --apply, table or json (the cidrx.apply/v1 document); text means table.",
)
@click.option(
    "--emit",
    type=RegisteredChoice(registry.emit_formats),
    help="With --plan: also write the plan as Terraform (HCL) beside the plan's JSON, its --out path with .tf "
    "instead of .json (--out p.json writes p.json and p.tf); "
    "with --out -, print the HCL instead of the plan's JSON. With --apply: after the apply (also one that "
    "stopped partway, or a plan already applied), write that .tf beside the plan file with import blocks for "
    "what the apply created, so Terraform adopts it. Other formats are the plan's owner's (e.g. helm: the Helm "
    "values that keep what the plan changes), written the same way with --plan only.",
)
@click.option("--yes", is_flag=True, help="With --apply: do not ask (required when stdin is not a terminal).")
@WAIT_FOR_LOCK
def expand(
    target: TargetOptions,
    plan_mode: bool,
    apply_path: str | None,
    snapshot_path: str | None,
    out: str | None,
    strategy: str | None,
    cidr: str | None,
    add_nodes: int | None,
    max_pods_per_node: int | None,
    pool_name: str | None,
    template: str | None,
    allow_class_e: bool,
    force: bool,
    output: str,
    emit: str | None,
    yes: bool,
    wait_for_lock: float | None,
) -> int:
    """Add pod address space: --plan writes a reviewable plan, --apply PLAN.json carries it out.

    \b
      cidrx expand --eks --region R --cluster C --plan [--out PLAN.json]
      cidrx expand --gke --project P --location L --cluster C --plan [--strategy cluster-range]
      cidrx expand --apply PLAN.json [--yes]

    Apply takes a fresh snapshot and refuses (exit 4) if the estate changed since the plan was made;
    if it stops partway (exit 5), the same command resumes.
    """
    if plan_mode and apply_path:
        raise InvalidInput("--plan and --apply are mutually exclusive: make the plan, review it, then apply it")
    if not plan_mode and not apply_path:
        raise InvalidInput("expand needs --plan (make a plan) or --apply PLAN.json (carry one out)")
    plan_only = {
        "--snapshot": snapshot_path,
        "--out": out,
        "--strategy": strategy,
        "--cidr": cidr,
        "--add-nodes": add_nodes,
        "--max-pods-per-node": max_pods_per_node,
        "--pool-name": pool_name,
        "--template-pool": template,
        "--allow-class-e": allow_class_e or None,
        "--force": force or None,
    }
    if apply_path:
        given = [name for name, value in plan_only.items() if value is not None]
        if given:
            raise InvalidInput(f"{', '.join(given)} only work with --plan; the plan file already fixes them")
        if emit and emit != "terraform":
            raise InvalidInput(f"--emit {emit} only works with --plan", hint=f"make the plan with --plan --emit {emit}")
        if emit:
            return apply_and_emit(target, apply_path, yes, output, wait_for_lock)
        return apply(target, apply_path, yes, output=output, wait_for_lock=wait_for_lock)
    if wait_for_lock is not None:
        raise InvalidInput("--wait-for-lock only works with --apply; --plan takes no lock")
    if yes:
        raise InvalidInput("--yes only works with --apply; --plan never changes anything")
    from cidrx.model.options import PlanOptions

    options = PlanOptions(
        strategy,
        cidr,
        add_nodes,
        pool_name=pool_name,
        template=template,
        max_pods_per_node=max_pods_per_node,
        allow_class_e=allow_class_e,
        force=force,
    )
    return make(target, snapshot_path, out, options, output, emit)
