"""Generate the reference docs and JSON schemas from the code, so they cannot drift from it.

`python -m tools.docgen` writes docs/cli.md (from the click command tree, read at run time), docs/findings.md
(from the FindingKind declarations each analyze module exports as `KINDS`, with examples taken from
diagnosing the bundled snapshots), docs/schemas/*.schema.json (from the models via msgspec) and the policy
blocks of docs/permissions.md (what `cidrx permissions` prints; the prose around them is kept) and the
exporter's ClusterRole in deploy/kubernetes/clusterrole.yaml.
`python -m tools.docgen --check` writes nothing and exits 1 when a committed file differs; tests/test_docs.py
and tests/test_schemas.py do the same comparison.

Not imported by the CLI: it is a developer tool, and it imports everything.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from cidrx import registry
from cidrx.model.findings import FindingKind

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
REGENERATE = "python -m tools.docgen"
DRAFT = "https://json-schema.org/draft/2020-12/schema"


class DocgenError(Exception):
    """The source holds something the generator cannot document (a malformed KINDS, one id declared twice
    differently, a missing generated block); the message says where and what to fix."""


# --- findings ----------------------------------------------------------------------------------------------


def _heading(spec: registry.ProviderSpec | registry.IpamSpec) -> str:
    """A plugin's heading in the catalogue: its title, with the qualifier its help texts give in parentheses
    (a provider's CNI, "plain clusters"), if any."""
    if isinstance(spec, registry.ProviderSpec):
        for text in (spec.help, spec.permissions_help):
            found = re.search(r"\(([^)]*)\)", text)
            if found:
                return f"{spec.title} ({found[1]})"
    return spec.title


def plugin_headings() -> dict[str, str]:
    """Provider and IPAM folders in the order the catalogue lists them, with their headings: the cloud
    providers, the in-cluster IPAMs, then the providers reached through kubeconfig alone (cidrx.registry)."""
    clouds: list[registry.ProviderSpec | registry.IpamSpec] = [p for p in registry.providers() if not p.in_cluster]
    in_cluster = [p for p in registry.providers() if p.in_cluster]
    return {spec.name: _heading(spec) for spec in [*clouds, *registry.ipams(), *in_cluster]}


ANY_TARGET = "Any target"
SEVERITY_ORDER = ("critical", "warning", "info")


@dataclass(frozen=True)
class Declaration:
    """The finding kinds one module exports as `KINDS` (the ones it raises)."""

    module: str
    path: str  # relative to the repository root
    kinds: tuple[FindingKind, ...]


@dataclass(frozen=True)
class CatalogueEntry:
    id: str
    severities: tuple[str, ...]
    group: str
    paths: tuple[str, ...]
    meaning: str


def declarations(package: str = "cidrx") -> list[Declaration]:
    """Every module of `package`, and of each registered plugin that lives outside it, that exports `KINDS`,
    imported (modules import SDKs lazily, so this is cheap and needs no cloud)."""
    specs = [*registry.providers(), *registry.ipams()]
    roots = [package, *(s.package for s in specs if s.package and not s.package.startswith(f"{package}."))]
    return sorted((d for root in dict.fromkeys(roots) for d in _declarations_in(root)), key=lambda d: d.path)


def _declarations_in(package: str) -> list[Declaration]:
    root = importlib.import_module(package)
    out = []
    for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}."):
        if info.name.endswith(".__main__"):
            continue
        module = importlib.import_module(info.name)
        kinds = getattr(module, "KINDS", None)
        if kinds is None:
            continue
        if not isinstance(kinds, tuple) or not all(isinstance(k, FindingKind) for k in kinds):
            raise DocgenError(f"{info.name}.KINDS must be a tuple of FindingKind")
        path = Path(inspect.getfile(module)).resolve().relative_to(ROOT).as_posix()
        out.append(Declaration(info.name, path, kinds))
    return out


def _group_of(module: str) -> str:
    """The plugin whose package declares a finding (its name), else the cidrx package it is raised in
    (`cidrx.model...` -> "model")."""
    for spec in (*registry.providers(), *registry.ipams()):
        if spec.package and (module == spec.package or module.startswith(f"{spec.package}.")):
            return spec.name
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else ""


def catalogue(decls: Sequence[Declaration] | None = None) -> list[CatalogueEntry]:
    """One entry per finding id, grouped by the provider folder whose module declares it (ids declared in
    cidrx/model or exported by several providers go to "Any target"), in `plugin_headings()` order then by
    id. Refuses an id declared twice with different meanings or severities."""
    headings = plugin_headings()
    by_id: dict[str, list[tuple[FindingKind, str]]] = {}
    decls = declarations() if decls is None else decls
    modules = {d.path: d.module for d in decls}
    for d in decls:
        for kind in d.kinds:
            by_id.setdefault(kind.id, []).append((kind, d.path))
    entries = []
    for fid, found in by_id.items():
        kind = found[0][0]
        if any(k != kind for k, _ in found[1:]):
            where = ", ".join(p for _, p in found)
            raise DocgenError(f"{fid} is declared differently in {where}: declare it once and import it")
        groups = {_group_of(modules[p]) for _, p in found}
        # Kinds declared in the model (not by a provider or IPAM) are raised for every target.
        any_target = len(groups) > 1 or groups == {"model"}
        group = ANY_TARGET if any_target else headings.get(next(iter(groups)), "Other")
        severities = tuple(s for s in SEVERITY_ORDER if s in {x.value for x in kind.severities})
        paths = tuple(sorted({p for _, p in found}))
        entries.append(CatalogueEntry(fid, severities, group, paths, kind.meaning))
    order = [*dict.fromkeys([*headings.values(), "Other", ANY_TARGET])]
    return sorted(entries, key=lambda e: (order.index(e.group), e.id))


def example_findings() -> dict[str, list[tuple[str, str, str]]]:
    """Finding id -> (example file, severity, summary) from diagnosing every bundled example snapshot."""
    from cidrx.app import diagnose
    from cidrx.model.snapshot import load_snapshot

    out: dict[str, list[tuple[str, str, str]]] = {}
    for path in sorted(EXAMPLES.glob("*.snapshot.json")):
        d = diagnose.analyze(load_snapshot(path))
        for f in d.findings:
            out.setdefault(f.id, []).append((f"examples/{path.name}", f.severity.value, f.summary))
    return out


def render_findings_md() -> str:
    entries = catalogue()
    examples = example_findings()
    lines = [
        "# Findings catalogue",
        "",
        f"<!-- Generated by `{REGENERATE}` from the source; do not edit by hand. -->",
        "",
        "Every finding `cidrx diagnose` can report, by the stable id that JSON output, Prometheus labels and",
        "alert rules use. Severity decides the exit code: `--fail-on critical` (the default) exits 3 on any",
        "critical finding, `--fail-on warning` on any warning or critical one. Where a finding's severity",
        "depends on the situation, both are listed. Examples come from diagnosing the snapshots in `examples/`.",
        "",
        "| id | severity | raised by |",
        "|---|---|---|",
    ]
    for e in entries:
        anchor = e.id.lower()
        lines.append(f"| [`{e.id}`](#{anchor}) | {' / '.join(e.severities)} | {e.group} |")
    group = None
    for e in entries:
        if e.group != group:
            group = e.group
            lines += ["", f"## {group}"]
        lines += ["", f"### {e.id}", ""]
        lines.append(f"**Severity:** {' or '.join(e.severities)} · **Source:** {', '.join(f'`{p}`' for p in e.paths)}")
        lines += ["", e.meaning]
        for file, sev, summary in examples.get(e.id, [])[:1]:
            lines += ["", f"Example ({sev}, `{file}`):", "", f"> {summary}"]
    lines.append("")
    return "\n".join(lines)


# --- CLI reference -----------------------------------------------------------------------------------------


def _help_markdown(text: str) -> list[str]:
    """A click help text as Markdown: `\\b` paragraphs (click's no-rewrap marker) become code blocks."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        if para.startswith("\b"):
            body = para.split("\n", 1)[1] if "\n" in para else ""
            out += ["```", inspect.cleandoc(body), "```", ""]
        else:
            out += [" ".join(line.strip() for line in para.splitlines()), ""]
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _option_row(param: click.Parameter, ctx: click.Context) -> str:
    names = ", ".join(f"`{n}`" for n in [*param.opts, *param.secondary_opts])
    if isinstance(param, click.Option) and param.count:
        value = "counter (repeat for more)"
    elif isinstance(param, click.Option) and param.is_flag:
        value = "flag"
    elif isinstance(param.type, click.Choice):
        value = " \\| ".join(f"`{c}`" for c in param.type.choices)
    else:
        value = f"`{param.make_metavar(ctx) if isinstance(param, click.Option) else param.human_readable_name}`"
        if isinstance(param.type, click.IntRange):
            low, high = param.type.min, param.type.max
            value += f" ({low}–{high})" if high is not None else f" (≥ {low})"
    default = ""
    if isinstance(param, click.Option) and not param.is_flag and param.default is not None and param.show_default:
        default = f"`{param.default}`"
    env = ""
    if isinstance(param, click.Option) and param.envvar:
        envs = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
        env = ", ".join(f"`{e}`" for e in envs)
    helptext = param.help if isinstance(param, click.Option) and param.help else ""
    if isinstance(param, click.Option) and param.required:
        helptext = "Required. " + helptext
    return f"| {names} | {value} | {default} | {env} | {_cell(helptext)} |"


def _command_sections(cmd: click.Command, ctx: click.Context, path: str) -> list[str]:
    lines = [f"## `{path}`", ""]
    lines += ["```", cmd.get_usage(ctx).replace("Usage: ", ""), "```", ""]
    if cmd.help:
        lines += _help_markdown(cmd.help)
    lines += ["| option | value | default | env | description |", "|---|---|---|---|---|"]
    lines += [_option_row(p, ctx) for p in cmd.get_params(ctx) if isinstance(p, click.Option)]
    lines.append("")
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            sub_ctx = click.Context(sub, info_name=name, parent=ctx)
            lines += _command_sections(sub, sub_ctx, f"{path} {name}")
    return lines


def exit_codes() -> list[tuple[int, str]]:
    """The exit code table, parsed from the CLI's own `--help` epilog (one source for both)."""
    from cidrx.cli import EXIT_CODES_HELP

    return [(int(m[1]), m[2].strip()) for m in re.finditer(r"^\s+(\d+)\s+(.+)$", EXIT_CODES_HELP, re.M)]


def render_cli_md() -> str:
    from cidrx.cli import cli

    ctx = click.Context(cli, info_name="cidrx", terminal_width=100, max_content_width=100, **cli.context_settings)
    lines = [
        "# CLI reference",
        "",
        f"<!-- Generated by `{REGENERATE}` from the click commands; do not edit by hand. -->",
        "",
        "Every command and option, as `cidrx --help` and `cidrx COMMAND --help` show them. Options with an",
        "env column can also be set through that variable; a flag given on the command line wins.",
        "",
    ]
    commands = [n for n in cli.list_commands(ctx) if (c := cli.get_command(ctx, n)) is not None and not c.hidden]
    lines += ["Commands: " + ", ".join(f"[`{n}`](#cidrx-{n})" for n in commands), ""]
    lines += _command_sections(cli, ctx, "cidrx")
    lines += ["## Exit codes", "", "| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {_cell(meaning)} |" for code, meaning in exit_codes()]
    lines += [
        "",
        "Errors are one line on stderr (`cidrx: error: ...`, sometimes followed by `hint: ...`). Ctrl-C outside",
        "an apply exits 130.",
        "",
        "## Shell completion",
        "",
        "click generates the completion script; source it from your shell's startup file:",
        "",
        "```",
        "# bash (~/.bashrc)",
        'eval "$(_CIDRX_COMPLETE=bash_source cidrx)"',
        "# zsh (~/.zshrc)",
        'eval "$(_CIDRX_COMPLETE=zsh_source cidrx)"',
        "# fish (~/.config/fish/completions/cidrx.fish)",
        "_CIDRX_COMPLETE=fish_source cidrx | source",
        "```",
        "",
    ]
    return "\n".join(lines)


# --- JSON schemas ------------------------------------------------------------------------------------------


def _document_schema(model: type, tag: str, title: str, description: str) -> dict[str, Any]:
    """msgspec's schema of `model`, wrapped as a draft 2020-12 document whose `schema` field is pinned to
    `tag` and required (every document cidrx writes carries it)."""
    import msgspec

    generated = msgspec.json.schema(model)
    defs: dict[str, Any] = generated["$defs"]
    root = defs[model.__name__]
    root["properties"]["schema"] = {"const": tag, "default": tag}
    root["required"] = sorted({*root.get("required", []), "schema"}, key=list(root["properties"]).index)
    if "Target" in defs:  # a provider name is a string in the model; the documents admit the registered ones
        from cidrx import registry

        defs["Target"]["properties"]["provider"] = {"enum": list(registry.provider_names())}
    return {"$schema": DRAFT, "title": title, "description": description, "$ref": generated["$ref"], "$defs": defs}


def _require_all(schema: dict[str, Any]) -> None:
    schema["required"] = list(schema.get("properties", {}))


def diagnosis_schema() -> dict[str, Any]:
    """The `-o json` diagnosis document. It is built from the Diagnosis model (cidrx/render/jsonout.py writes
    the same fields), with every key required because the renderer always writes every key (null when not
    applicable) and `counts` always holding every severity."""
    from cidrx.model.findings import Diagnosis, Severity

    doc = _document_schema(
        Diagnosis,
        "cidrx.diagnosis/v1",
        "cidrx diagnosis (cidrx.diagnosis/v1)",
        "What `cidrx diagnose -o json` prints: capacity per address space and findings, worst first.",
    )
    for name in ("Diagnosis", "Capacity", "Finding", "Target"):
        _require_all(doc["$defs"][name])
    counts = doc["$defs"]["Diagnosis"]["properties"]["counts"]
    counts["required"] = [s.value for s in Severity]
    return doc


def plan_schema() -> dict[str, Any]:
    from cidrx.model.plan import PLAN_SCHEMA, Plan

    return _document_schema(
        Plan,
        PLAN_SCHEMA,
        "cidrx plan (cidrx.plan/v1)",
        "A plan file written by `cidrx expand --plan` or `cidrx reclaim --plan`; `digest` is the sha256 of the "
        "canonical JSON of the whole document except `digest` (notes, summary and created_at included), and "
        "apply refuses a file whose digest does not match. `content_digest` (added within v1; absent from older "
        "plans) is the sha256 of the canonical JSON of {target, basis, steps} only: equal for two plans of the "
        "same estate, whatever their created_at or notes. Reviewers' notes live beside the plan in PLAN.json.notes.",
    )


def snapshot_schema() -> dict[str, Any]:
    from cidrx.model.snapshot import SNAPSHOT_SCHEMA, snapshot_type

    return _document_schema(
        snapshot_type(),
        SNAPSHOT_SCHEMA,
        "cidrx snapshot (cidrx.snapshot/v1)",
        "Everything `cidrx diagnose` reads, written by `cidrx snapshot`; `fingerprint` is the sha256 of the "
        "canonical content.",
    )


def fleet_schema() -> dict[str, Any]:
    """The fleet-mode `-o json` document (`diagnose --all-clusters` / `--all-contexts` / several `--context`),
    built from cidrx.fleet's models (cidrx/render/fleet.py writes the same fields). Every key is required,
    as in the diagnosis schema: the renderer always writes every key, null when not applicable, and each
    cluster's `diagnosis` is the same document `diagnose -o json` prints for one cluster."""
    from cidrx.model.findings import Severity
    from cidrx.model.fleet import FLEET_SCHEMA, Fleet

    doc = _document_schema(
        Fleet,
        FLEET_SCHEMA,
        "cidrx fleet diagnosis (cidrx.fleet/v1)",
        "What `cidrx diagnose` prints with -o json in fleet mode: one entry per cluster (its diagnosis, or the "
        "error that kept it from being read), totals, and the fleet's exit code (the worst cluster's).",
    )
    defs = doc["$defs"]
    for name in ("Fleet", "Member", "FleetCounts", "Diagnosis", "Capacity", "Finding", "Target"):
        _require_all(defs[name])
    defs["Diagnosis"]["properties"]["schema"] = {"const": "cidrx.diagnosis/v1", "default": "cidrx.diagnosis/v1"}
    defs["Diagnosis"]["properties"]["counts"]["required"] = [s.value for s in Severity]
    return doc


def forecast_schema() -> dict[str, Any]:
    """The `cidrx forecast -o json` document, from its model (cidrx/render/forecast.py writes it with
    msgspec), every key required: the renderer writes each one, null when not known."""
    from cidrx.model.forecast import ForecastDocument

    doc = _document_schema(
        ForecastDocument,
        "cidrx.forecast/v1",
        "cidrx forecast (cidrx.forecast/v1)",
        "What `cidrx forecast -o json` prints: per address space today's use, the trend per day with its 95 % "
        "band, the days left (0: full now; null: not within the horizon), the run-out date and the fitted window.",
    )
    for name in ("ForecastDocument", "RangeEntry", "Window"):
        _require_all(doc["$defs"][name])
    return doc


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


# --- permissions page -------------------------------------------------------------------------------------

# docs/permissions.md is hand-written around blocks that are `cidrx permissions` output; each block sits
# between these two lines and is rewritten from the code, the prose around it is kept as it is.
PERMISSIONS_MD = Path("docs/permissions.md")
GENERATED_BLOCK = re.compile(
    r"(?P<open><!-- generated: (?P<name>[a-z0-9-]+) \(python -m tools\.docgen\) -->\n)(?P<body>.*?)"
    r"(?P<close><!-- end generated -->)",
    re.S,
)


def _fence(lang: str, text: str) -> str:
    return f"```{lang}\n{text}```\n"


def _words(items: Sequence[str]) -> str:
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def _rbac_key(rule: dict[str, Any]) -> tuple[str, str]:
    return (rule["apiGroups"][0], rule["resources"][0])


def _cluster_role_difference(base: dict[str, Any], other: dict[str, Any]) -> str:
    """How `other`'s ClusterRole rules differ from `base`'s, in words."""
    a = {_rbac_key(r): r for r in base["cluster_role"]["rules"] if "resources" in r}
    b = {_rbac_key(r): r for r in other["cluster_role"]["rules"] if "resources" in r}
    parts = [f"without the `{k[1]}` rule" for k in sorted(a.keys() - b.keys())]
    parts += [f"with a `{k[1]}` rule (`{', '.join(b[k]['verbs'])}`)" for k in sorted(b.keys() - a.keys())]
    for k in sorted(a.keys() & b.keys()):
        if a[k] != b[k]:
            parts.append(f"with only `{', '.join(b[k]['verbs'])}` on `{k[1]}`")
    return _words(parts) if parts else "exactly the same"


def permissions_blocks() -> dict[str, str]:
    """Each generated block of docs/permissions.md by name, as `cidrx permissions` prints it now."""
    from cidrx import registry
    from cidrx.app.permissions import document, needs
    from cidrx.cli.permissions import cluster_role_yaml, gcp_role_yaml, iam_policy_json

    full = {p: document(needs(p, "all")) for p in registry.provider_names()}
    gke_read = document(needs("gke", "diagnose"))["gcp_permissions"]
    rows = sorted(
        {(s["strategy"], s["action"], tuple(s["permissions"])) for doc in full.values() for s in doc["steps"]}
    )
    table = ["| plan kind | step action | declared permissions |", "|---|---|---|"]
    table += [f"| {k} | `{a}` | {', '.join(f'`{p}`' for p in perms)} |" for k, a, perms in rows]
    return {
        "eks-iam-policy": _fence("json", iam_policy_json(full["eks"])),
        "gke-role": _fence("yaml", gcp_role_yaml(full["gke"])),
        "gke-diagnose": f"`--for diagnose` keeps {_words([f'`{p}`' for p in gke_read])}.\n",
        "eks-cluster-role": _fence("yaml", cluster_role_yaml(full["eks"])),
        "gke-cluster-role": "For GKE (`cidrx permissions --gke`) the rules are the same "
        f"{_cluster_role_difference(full['eks'], full['gke'])}.\n",
        "k8s-cluster-role": _fence("yaml", cluster_role_yaml(full["k8s"])),
        "steps": "\n".join(table) + "\n",
    }


def render_permissions_md(page: str) -> str:
    """`page` (docs/permissions.md) with every generated block rewritten; refuses a page that lacks one."""
    blocks = permissions_blocks()
    seen: set[str] = set()

    def fill(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in blocks:
            raise DocgenError(f"{PERMISSIONS_MD}: no generated block is called {name!r} (known: {sorted(blocks)})")
        seen.add(name)
        return m["open"] + blocks[name] + m["close"]

    out = GENERATED_BLOCK.sub(fill, page)
    missing = sorted(blocks.keys() - seen)
    if missing:
        raise DocgenError(
            f"{PERMISSIONS_MD} lacks the generated block(s) {missing}: put each between "
            "'<!-- generated: NAME (python -m tools.docgen) -->' and '<!-- end generated -->' lines"
        )
    return out


EXPORTER_CLUSTER_ROLE = Path("deploy/kubernetes/clusterrole.yaml")


def render_exporter_cluster_role() -> str:
    """The ClusterRole of the in-cluster exporter: exactly what `cidrx permissions --k8s --for diagnose` prints."""
    from cidrx.app.permissions import document, needs
    from cidrx.cli.permissions import cluster_role_yaml

    return (
        f"# Generated by `{REGENERATE}` from cidrx's permission declarations: the read-only ClusterRole\n"
        "# `cidrx permissions --k8s --for diagnose` prints, bound to the exporter in clusterrolebinding.yaml.\n"
        + cluster_role_yaml(document(needs("k8s", "diagnose")))
    )


# --- driver ------------------------------------------------------------------------------------------------


def generated() -> dict[Path, str]:
    """Every generated file (path relative to the repository root) and its content now."""
    return {
        Path("docs/cli.md"): render_cli_md(),
        Path("docs/findings.md"): render_findings_md(),
        PERMISSIONS_MD: render_permissions_md((ROOT / PERMISSIONS_MD).read_text()),
        Path("docs/schemas/diagnosis.schema.json"): _json(diagnosis_schema()),
        Path("docs/schemas/plan.schema.json"): _json(plan_schema()),
        Path("docs/schemas/snapshot.schema.json"): _json(snapshot_schema()),
        Path("docs/schemas/fleet.schema.json"): _json(fleet_schema()),
        Path("docs/schemas/forecast.schema.json"): _json(forecast_schema()),
        EXPORTER_CLUSTER_ROLE: render_exporter_cluster_role(),
    }


def stale(root: Path = ROOT) -> list[Path]:
    """Generated files whose committed content differs from what the code produces now."""
    out = []
    for rel, text in generated().items():
        path = root / rel
        if not path.exists() or path.read_text() != text:
            out.append(rel)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args != ["--check"]:
        click.echo(f"usage: {REGENERATE} [--check]", err=True)
        return 2
    try:
        if args == ["--check"]:
            old = stale()
            for rel in old:
                click.echo(f"out of date: {rel} (run {REGENERATE})", err=True)
            return 1 if old else 0
        for rel, text in generated().items():
            path = ROOT / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                click.echo(f"wrote {rel}", err=True)
    except DocgenError as exc:
        click.echo(f"docgen: error: {exc}", err=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
