"""The docs stay true to the code: generated pages are up to date, every finding id is documented, the CI
recipes run only valid cidrx command lines, and every docs page is linked and links to pages that exist."""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from cidrx.app import diagnose as app_diagnose
from cidrx.cli import cli
from cidrx.errors import ExitStatus
from cidrx.model.findings import KUBE_UNREACHABLE, Diagnosis, FindingKind, Severity, kube_unreachable
from cidrx.model.snapshot import load_snapshot
from tools import docgen

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = ROOT / "examples"
ID_SHAPE = re.compile(r"^(EKS|GKE|WHEREABOUTS|CALICO|NODE-IPAM|KUBE)-[A-Z0-9]+(?:-[A-Z0-9]+)*$")
OUT_OF_DATE = "is out of date with the code; run: python -m tools.docgen (and commit the result)"


# --- generated pages ---------------------------------------------------------------------------------------


def test_cli_reference_is_up_to_date() -> None:
    assert (DOCS / "cli.md").read_text() == docgen.render_cli_md(), f"docs/cli.md {OUT_OF_DATE}"


def test_findings_catalogue_is_up_to_date() -> None:
    assert (DOCS / "findings.md").read_text() == docgen.render_findings_md(), f"docs/findings.md {OUT_OF_DATE}"


def test_docgen_check_mode_agrees() -> None:
    assert docgen.main(["--check"]) == 0, f"generated docs {OUT_OF_DATE}"


def _commands(group: click.Group, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None
        sub = click.Context(cmd, info_name=name, parent=ctx)
        yield cmd, sub
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, sub)


def test_cli_reference_has_every_command_and_option() -> None:
    text = (DOCS / "cli.md").read_text()
    ctx = click.Context(cli, info_name="cidrx", **cli.context_settings)
    for cmd, sub in _commands(cli, ctx):
        assert f"## `{sub.command_path}`" in text
        for param in cmd.get_params(sub):
            if isinstance(param, click.Argument):  # shown in the command's usage line
                assert f"{sub.command_path} [OPTIONS] {param.metavar}" in text, f"{sub.command_path} {param.name}"
                continue
            for opt in param.opts:
                assert f"`{opt}`" in text, f"{sub.command_path} {opt} missing from docs/cli.md"


def test_cli_reference_has_the_exit_code_table() -> None:
    codes = dict(docgen.exit_codes())
    assert sorted(codes) == [int(s) for s in ExitStatus]
    text = (DOCS / "cli.md").read_text()
    for code in codes:
        assert re.search(rf"^\| {code} \| ", text, re.M)


def test_help_paragraphs_marked_no_rewrap_become_code_blocks() -> None:
    lines = docgen._help_markdown("Intro text\nwrapped.\n\n\b\n  cidrx a\n  cidrx b\n\nAfter.")
    assert lines == ["Intro text wrapped.", "", "```", "cidrx a\ncidrx b", "```", "", "After.", ""]


# --- findings ---------------------------------------------------------------------------------------------


def _diagnose(path: Path) -> Diagnosis:
    return app_diagnose.analyze(load_snapshot(path))


def _declared() -> dict[str, FindingKind]:
    return {k.id: k for d in docgen.declarations() for k in d.kinds}


def test_every_declared_kind_is_documented_with_its_meaning() -> None:
    text = (DOCS / "findings.md").read_text()
    declared = _declared()
    assert {e.id for e in docgen.catalogue()} == set(declared)
    for fid, kind in declared.items():
        section = text.split(f"\n### {fid}\n", 1)[1].split("\n### ", 1)[0]
        assert kind.meaning in section, fid
        listed = {s.strip() for s in section.split("**Severity:** ", 1)[1].split(" · ", 1)[0].split(" or ")}
        assert listed == {s.value for s in kind.severities}, fid


def test_every_finding_raised_on_the_examples_is_declared_with_its_severity() -> None:
    declared = _declared()
    raised = {(f.id, f.severity) for p in sorted(EXAMPLES.glob("*.snapshot.json")) for f in _diagnose(p).findings}
    assert len({fid for fid, _ in raised}) >= 15  # the examples exercise every provider and IPAM
    for fid, severity in raised:
        assert fid in declared, f"{fid} is raised but no module declares it in KINDS"
        assert severity in declared[fid].severities, (fid, severity)


def test_no_finding_id_is_written_outside_its_declaration() -> None:
    """Every id-shaped string literal in cidrx's source is the id argument of a FindingKind: raise sites and
    comparisons go through the declared kind, so renaming an id is a one-line change."""
    stray = []
    for path in sorted((ROOT / "cidrx").rglob("*.py")):
        tree = ast.parse(path.read_text())
        declared_at = {
            id(n.args[0])
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "FindingKind" and n.args
        }
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Constant)
                and isinstance(n.value, str)
                and ID_SHAPE.match(n.value)
                and id(n) not in declared_at
            ):
                stray.append(f"{path.relative_to(ROOT)}:{n.lineno} {n.value}")
    assert not stray, stray


def test_ids_are_stable_shaped_and_severities_known() -> None:
    for fid, kind in _declared().items():
        assert re.fullmatch(r"[A-Z]+(?:-[A-Z0-9]+)+", fid), fid
        assert kind.severities and set(kind.severities) <= set(Severity), fid


def test_every_finding_of_the_examples_is_in_the_catalogue() -> None:
    listed = {e.id for e in docgen.catalogue()}
    seen = set(docgen.example_findings())
    assert seen and seen <= listed


def test_catalogue_groups_by_provider() -> None:
    groups = {e.id: e.group for e in docgen.catalogue()}
    assert groups["EKS-SUBNET-EXHAUSTED"] == "EKS (AWS VPC CNI)"
    assert groups["GKE-POD-RANGE-EXHAUSTED"] == "GKE"
    assert groups["WHEREABOUTS-STALE-ALLOCATION"] == "Whereabouts"
    assert groups["CALICO-BORROWED-IPS"] == "Calico"
    assert groups["NODE-IPAM-EXHAUSTED"] == "Kubernetes node IPAM"
    assert groups["KUBE-UNREACHABLE"] == docgen.ANY_TARGET


def test_a_kind_refuses_a_severity_it_does_not_declare() -> None:
    kind = FindingKind("PROV-THING", "Something happened.", (Severity.CRITICAL, Severity.WARNING))
    f = kind.finding(Severity.WARNING, "subject", "summary", ("evidence",), "fix")
    assert (f.id, f.severity, f.evidence, f.remediation) == ("PROV-THING", Severity.WARNING, ("evidence",), "fix")
    with pytest.raises(ValueError, match="PROV-THING is declared with severities critical, warning, not info"):
        kind.finding(Severity.INFO, "subject", "summary")


@pytest.mark.parametrize(
    ("fid", "meaning", "severities", "message"),
    [
        ("prov-thing", "x", (Severity.INFO,), "not of the form"),
        ("PROVTHING", "x", (Severity.INFO,), "not of the form"),
        ("PROV-THING", " ", (Severity.INFO,), "has no meaning"),
        ("PROV-THING", "x", (), "must declare its severities"),
        ("PROV-THING", "x", (Severity.INFO, Severity.INFO), "must declare its severities"),
    ],
)
def test_a_malformed_kind_is_refused_where_it_is_declared(
    fid: str, meaning: str, severities: tuple[Severity, ...], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FindingKind(fid, meaning, severities)


def test_a_kind_is_declared_as_its_catalogue_entry() -> None:
    kind = FindingKind.parse(
        """PROV-THING (critical or warning): Something
        happened to the cluster."""
    )
    assert kind == FindingKind(
        "PROV-THING", "Something happened to the cluster.", (Severity.CRITICAL, Severity.WARNING)
    )
    with pytest.raises(ValueError, match="not written as"):
        FindingKind.parse("PROV-THING: no severities")
    with pytest.raises(ValueError, match="PROV-THING: 'fatal' is not a valid Severity"):
        FindingKind.parse("PROV-THING (fatal): unknown severity")


def test_all_in_lists_the_kinds_a_module_binds_once_in_order() -> None:
    a = FindingKind("PROV-A", "a", (Severity.INFO,))
    b = FindingKind("PROV-B", "b", (Severity.WARNING,))
    assert FindingKind.all_in({"A": a, "OTHER": 3, "B": b, "ALIAS": a}) == (a, b)


def test_catalogue_refuses_one_id_declared_twice_differently() -> None:
    a = docgen.Declaration("p.a", "cidrx/providers/a/analyze.py", (FindingKind("A-X", "one", (Severity.INFO,)),))
    b = docgen.Declaration("p.b", "cidrx/providers/b/analyze.py", (FindingKind("A-X", "two", (Severity.INFO,)),))
    with pytest.raises(docgen.DocgenError, match=r"A-X is declared differently in cidrx/providers/a/analyze.py"):
        docgen.catalogue([a, b])


def test_a_kind_exported_by_several_providers_is_listed_once_for_any_target() -> None:
    shared = FindingKind("ANY-X", "shared", (Severity.INFO,))
    a = docgen.Declaration("cidrx.providers.eks.analyze", "cidrx/providers/eks/analyze.py", (shared,))
    b = docgen.Declaration(
        "cidrx.providers.gke.analyze",
        "cidrx/providers/gke/analyze.py",
        (shared, FindingKind("GKE-Y", "y", (Severity.WARNING,))),
    )
    entries = {e.id: e for e in docgen.catalogue([a, b])}
    assert entries["ANY-X"].group == docgen.ANY_TARGET
    assert entries["ANY-X"].paths == ("cidrx/providers/eks/analyze.py", "cidrx/providers/gke/analyze.py")
    assert (entries["GKE-Y"].group, entries["GKE-Y"].severities) == ("GKE", ("warning",))


def test_kube_unreachable_is_declared_once_for_any_target() -> None:
    exporters = [d.module for d in docgen.declarations() if any(k.id == KUBE_UNREACHABLE.id for k in d.kinds)]
    assert exporters == ["cidrx.model.findings"]
    (entry,) = [e for e in docgen.catalogue() if e.id == KUBE_UNREACHABLE.id]
    assert (entry.group, entry.paths, entry.severities) == (docgen.ANY_TARGET, ("cidrx/model/findings.py",), ("info",))
    f = kube_unreachable("skipped", "pass --kubeconfig", reason="why")
    assert (f.id, f.severity, f.subject, f.evidence) == ("KUBE-UNREACHABLE", Severity.INFO, "kubernetes", ("why",))
    assert kube_unreachable("skipped", "fix", subject="kind-demo").evidence == ()


# --- CI recipes: the command lines they run are valid cidrx invocations -----------------------------------


def _shell_commands(script: str) -> Iterator[list[str]]:
    """Simple commands of a shell script, without redirections (enough for the recipes' lines)."""
    text = re.sub(r"\\\n\s*", " ", script)
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        tokens = list(lexer)
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok in ("&&", "||", ";", "|", "&", "(", ")"):
                if words:
                    yield words
                words = []
            elif tok in (">", ">>", "<", ">&"):
                i += 1  # skip the redirection target
            else:
                words.append(tok)
            i += 1
        if words:
            yield words


def _cidrx_invocations(scripts: list[str]) -> list[list[str]]:
    return [words[1:] for s in scripts for words in _shell_commands(s) if words[0] == "cidrx"]


def _parse(args: list[str]) -> click.Context:
    """Parse a cidrx command line the way the CLI does, without running it (click raises on bad options,
    bad choices, missing values)."""
    i = next(n for n, a in enumerate(args) if not a.startswith("-"))
    ctx = cli.make_context("cidrx", args[: i + 1])
    name, cmd, _ = cli.resolve_command(ctx, [args[i]])
    assert name is not None and cmd is not None
    return cmd.make_context(name, args[i + 1 :], parent=ctx)


def _github() -> tuple[dict[str, str], list[tuple[dict[str, str], str]]]:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "github-workflow.yml").read_text())
    runs = []
    for job in doc["jobs"].values():
        for step in job["steps"]:
            if "run" in step:
                env = {**doc.get("env", {}), **job.get("env", {}), **step.get("env", {})}
                runs.append((env, step["run"]))
    return doc.get("env", {}), runs


def _gitlab() -> list[tuple[dict[str, str], str]]:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "gitlab-ci.yml").read_text())
    runs = []
    for name, job in doc.items():
        if name.startswith(".") or not isinstance(job, dict) or "script" not in job:
            continue
        base = doc.get(job["extends"], {}) if "extends" in job else {}
        env = {**doc.get("variables", {}), **base.get("variables", {}), **job.get("variables", {})}
        for key in ("before_script", "script"):
            for item in job.get(key, base.get(key, [])):
                runs.append((env, item))
    return runs


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for key in list(os.environ):
        if key.startswith("CIDRX_"):
            monkeypatch.delenv(key)
    return monkeypatch


def _check_invocations(runs: list[tuple[dict[str, str], str]], mp: pytest.MonkeyPatch) -> list[list[str]]:
    seen = []
    for env, script in runs:
        for key, value in env.items():
            if key.startswith("CIDRX_"):
                mp.setenv(key, str(value))
        for args in _cidrx_invocations([script]):
            ctx = _parse(args)
            params = ctx.params
            assert any(params.get(p) for p in ("eks", "gke", "k8s")), f"no target for cidrx {' '.join(args)}"
            seen.append(args)
    return seen


def _has(seen: list[list[str]], *words: str) -> bool:
    return any(all(w in args for w in words) for args in seen)


@pytest.mark.parametrize("recipe", ["github", "gitlab"])
def test_ci_recipes_run_valid_cidrx_commands(recipe: str, clean_env: pytest.MonkeyPatch) -> None:
    runs = _github()[1] if recipe == "github" else _gitlab()
    seen = _check_invocations(runs, clean_env)
    assert _has(seen, "snapshot", "--out")
    assert _has(seen, "diagnose", "--fail-on", "warning", "markdown")
    assert _has(seen, "diagnose", "json")
    assert _has(seen, "expand", "--plan", "--out")
    assert _has(seen, "expand", "--apply", "--yes")


def test_a_bad_option_in_a_recipe_would_fail(clean_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(click.UsageError):
        _parse(["diagnose", "--fail-on", "warnings"])
    with pytest.raises(click.UsageError):
        _parse(["expand", "--plann"])


def test_github_recipe_gates_apply_behind_an_environment() -> None:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "github-workflow.yml").read_text())
    jobs = doc["jobs"]
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads the key `on` as the boolean True
    assert "schedule" in triggers
    assert jobs["apply"]["environment"] == "cidrx-apply"
    assert jobs["apply"]["needs"] == "plan"
    assert doc["permissions"]["id-token"] == "write"
    uploads = [s for s in jobs["plan"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert uploads and "plan.json" in uploads[0]["with"]["path"] and "plan.tf" in uploads[0]["with"]["path"]


_STATUS_FUNCTIONS = re.compile(r"\b(success|failure|always|cancelled)\(\)")


def _github_jobs_that_run(doc: dict[str, Any], diagnose: str, exit_code: str) -> set[str]:
    """Which jobs of the workflow run when the diagnose job ends with `diagnose` ('success' or 'failure')
    and its exit-code output, by GitHub's rules: a job whose `if:` names no status function gets an
    implicit `success()`, true only when every job up its whole `needs` chain succeeded; a skipped job's
    result is 'skipped'. Expressions are the small subset the recipe uses (&&, ||, !, ==, !=)."""
    jobs: dict[str, Any] = doc["jobs"]
    result: dict[str, str] = {}
    outputs: dict[str, dict[str, str]] = {"diagnose": {"exit-code": exit_code}}

    def needs_of(name: str) -> list[str]:
        needs = jobs[name].get("needs", [])
        return [needs] if isinstance(needs, str) else list(needs)

    def ancestors(name: str) -> set[str]:
        found: set[str] = set()
        for n in needs_of(name):
            found |= {n, *ancestors(n)}
        return found

    def evaluate(name: str) -> bool:
        expr = str(jobs[name].get("if", "")).strip()
        expr = expr.removeprefix("${{").removesuffix("}}").strip()
        if not _STATUS_FUNCTIONS.search(expr):
            expr = f"success() && ({expr})" if expr else "success()"
        upstream = ancestors(name)
        env = {
            "success": lambda: all(result[a] == "success" for a in upstream),
            "failure": lambda: any(result[a] == "failure" for a in upstream),
            "always": lambda: True,
            "cancelled": lambda: False,
        }
        py = re.sub(r"needs\.([\w-]+)\.outputs\.([\w-]+)", lambda m: repr(outputs.get(m[1], {}).get(m[2], "")), expr)
        py = re.sub(r"needs\.([\w-]+)\.result", lambda m: repr(result[m[1]]), py)
        py = py.replace("&&", " and ").replace("||", " or ").replace("!=", " != ")
        py = re.sub(r"!(?!=)", " not ", py)
        return bool(eval(py, {"__builtins__": {}}, env))

    order = list(jobs)  # the recipe lists jobs after the jobs they need
    for name in order:
        if name == "diagnose":
            result[name] = diagnose
        else:
            result[name] = "success" if evaluate(name) else "skipped"
    return {n for n, r in result.items() if r != "skipped"}


@pytest.mark.parametrize(
    ("diagnose", "exit_code", "expected"),
    [
        ("failure", "3", {"diagnose", "plan", "apply"}),  # findings: plan, then apply (after approval)
        ("success", "0", {"diagnose"}),  # nothing to fix
        ("failure", "6", {"diagnose"}),  # access error: nothing to plan
        ("failure", "1", {"diagnose"}),  # a bug
    ],
)
def test_github_recipe_reaches_apply_exactly_when_there_is_a_plan(
    diagnose: str, exit_code: str, expected: set[str]
) -> None:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "github-workflow.yml").read_text())
    assert _github_jobs_that_run(doc, diagnose, exit_code) == expected


def test_the_github_job_model_sees_the_implicit_success_trap() -> None:
    """The model above would have caught the recipe's old bug: apply with `needs: plan` and no `if:`."""
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "github-workflow.yml").read_text())
    del doc["jobs"]["apply"]["if"]
    assert _github_jobs_that_run(doc, "failure", "3") == {"diagnose", "plan"}


def test_gitlab_recipe_makes_apply_manual_in_an_environment() -> None:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "gitlab-ci.yml").read_text())
    apply = doc["cidrx-apply"]
    assert apply["environment"]["name"] == "cidrx-apply"
    assert all(rule.get("when") == "manual" for rule in apply["rules"])
    assert "plan.json" in doc["cidrx-plan"]["artifacts"]["paths"]
    assert "plan.tf" in doc["cidrx-plan"]["artifacts"]["paths"]


def test_gitlab_manual_apply_does_not_block_the_pipeline() -> None:
    """A job made manual by `rules` defaults to allow_failure: false, which leaves every pipeline that
    reaches it "blocked"; the apply job must be allowed to fail (in the rule or on the job)."""
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "gitlab-ci.yml").read_text())
    for name, job in doc.items():
        if name.startswith(".") or not isinstance(job, dict):
            continue
        for rule in job.get("rules", []):
            if rule.get("when") == "manual":
                assert rule.get("allow_failure", job.get("allow_failure")) is True, f"{name}: {rule}"


@pytest.mark.parametrize("recipe", ["github", "gitlab"])
def test_ci_recipes_emit_terraform_at_plan_and_apply(recipe: str, clean_env: pytest.MonkeyPatch) -> None:
    runs = _github()[1] if recipe == "github" else _gitlab()
    seen = _check_invocations(runs, clean_env)
    assert _has(seen, "expand", "--plan", "--emit", "terraform")
    assert _has(seen, "expand", "--apply", "--emit", "terraform")


def test_ci_page_embeds_the_recipe_files_verbatim() -> None:
    page = (DOCS / "ci.md").read_text()
    for name in ("github-workflow.yml", "gitlab-ci.yml"):
        assert (DOCS / "ci" / name).read_text().strip() in page, f"docs/ci.md must embed docs/ci/{name} as is"


# --- README: the 60-second tour shows real output ---------------------------------------------------------

ELIDED = "..."
_TIMESTAMP = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z\b")
# A plan id (the digest's first 16 hex digits): the digest seals created_at, so it changes with the time too.
# How old a snapshot is ("3 years ago") grows with the calendar.
_AGE = re.compile(r"\b(?:\d+ (?:year|month|day|hour|minute)s? ago|just now)\b")
_PLAN_ID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{16}(?:[0-9a-f]{48})?(?![0-9A-Za-z])")


def _tour_blocks() -> list[tuple[str, list[str]]]:
    """(command line, shown output lines) of every console block of the README's tour section."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## 60-second tour\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```console\n(.*?)^```$", section, re.M | re.S)
    out = []
    for body in blocks:
        first, *rest = body.rstrip("\n").split("\n")
        assert first.startswith("$ cidrx "), first
        out.append((first.removeprefix("$ "), rest))
    return out


def _normalise(lines: list[str], tmp: Path) -> list[str]:
    """What genuinely varies between runs: when the plan was made (and so its id), and where the temporary
    files go."""
    return [
        _AGE.sub(
            "<age>", _PLAN_ID.sub("<plan-id>", _TIMESTAMP.sub("<time>", line.replace(f"{tmp}/", "/tmp/")))
        ).rstrip()
        for line in lines
    ]


def _shown_matches(shown: list[str], real: list[str]) -> str | None:
    """None when `shown` is `real` with runs of lines replaced by `...` (each shown run contiguous, in
    order, the first at the top unless elided); else what went wrong."""
    segments: list[list[str]] = [[]]
    for line in shown:
        if line == ELIDED:
            segments.append([])
        else:
            segments[-1].append(line)
    position = 0
    for i, segment in enumerate(segments):
        if not segment:
            continue
        if i == 0:
            for n, (want, got) in enumerate(zip(segment, [*real, *[""] * len(segment)], strict=False), start=1):
                if want != got:
                    return f"output line {n} is\n{got}\nnot\n{want}"
            position = len(segment)
            continue
        for start in range(position, len(real) - len(segment) + 1):
            if real[start : start + len(segment)] == segment:
                position = start + len(segment)
                break
        else:
            return "not in the real output (in this order, contiguous):\n" + "\n".join(segment)
    if segments[-1] and position != len(real):
        return "the output goes on after:\n" + "\n".join(segments[-1])
    return None


def test_readme_tour_is_there_with_the_promised_commands() -> None:
    commands = [c for c, _ in _tour_blocks()]
    assert commands == [
        "cidrx diagnose --snapshot examples/eks-demo-ip.snapshot.json",
        "cidrx expand --snapshot examples/eks-demo-ip.snapshot.json --plan --out /tmp/plan.json",
        "cidrx expand --snapshot examples/eks-demo-ip.snapshot.json --plan --out - --emit terraform",
        "cidrx diagnose --snapshot examples/whereabouts-stale.snapshot.json -o markdown",
    ]
    readme = (ROOT / "README.md").read_text()
    assert readme.index("pip install '.[test]'") < readme.index("## 60-second tour") < readme.index("## What it is")


@pytest.mark.parametrize("index", range(4))
def test_readme_tour_output_is_real(index: int, tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    command, shown = _tour_blocks()[index]
    exit_code = 0
    if shown[-2:-1] == ["$ echo $?"]:
        exit_code, shown = int(shown[-1]), shown[:-2]
    args = [a.replace("/tmp/", f"{tmp_path}/") for a in shlex.split(command)[1:]]
    clean_env.chdir(ROOT)
    clean_env.delenv("COLUMNS", raising=False)  # the README shows output as a pipe or CI log gets it: 80 wide
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == exit_code, result.output
    problem = _shown_matches(_normalise(shown, tmp_path), _normalise(result.output.splitlines(), tmp_path))
    assert problem is None, f"README tour, `{command}`: {problem}"


def test_tour_matching_catches_a_wrong_line() -> None:
    real = ["a", "b", "c", "d"]
    assert _shown_matches(["a", "b", ELIDED, "d"], real) is None
    assert _shown_matches(["a", ELIDED, "c", ELIDED], real) is None
    assert _shown_matches(["a", "c"], real) is not None  # a gap must be marked
    assert _shown_matches(["a", ELIDED, "x"], real) is not None
    assert _shown_matches(["b", ELIDED, "d"], real) is not None  # the top must be shown
    assert _shown_matches(["a", ELIDED, "c"], real) is not None  # and the end, unless elided


# --- links ------------------------------------------------------------------------------------------------

LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_index_links_every_docs_page() -> None:
    index = (DOCS / "index.md").read_text()
    linked = {m for m in LINK.findall(index)}
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - {"index.md"}
    assert pages <= linked, f"docs/index.md does not link {sorted(pages - linked)}"


@pytest.mark.parametrize(
    "page", sorted(p.relative_to(ROOT).as_posix() for p in [*DOCS.rglob("*.md"), ROOT / "README.md"])
)
def test_relative_links_resolve(page: str) -> None:
    path = ROOT / page
    for target in LINK.findall(path.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue
        assert (path.parent / target).exists(), f"{page} links to {target}, which does not exist"


def test_docgen_module_is_not_imported_by_the_cli() -> None:
    """docgen imports every provider; the CLI must not pay for it (docs/architecture.md: --help stays fast)."""
    for path in (ROOT / "cidrx" / "cli").glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
        mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "tools.docgen" not in mods and "docgen" not in names, path
