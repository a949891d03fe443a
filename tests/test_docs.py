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

from cidrx import docgen
from cidrx.cli import cli

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
OUT_OF_DATE = "is out of date with the code; run: python -m cidrx.docgen (and commit the result)"


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
            for opt in param.opts:
                assert f"`{opt}`" in text, f"{sub.command_path} {opt} missing from docs/cli.md"


def test_cli_reference_has_the_exit_code_table() -> None:
    codes = dict(docgen.exit_codes())
    assert sorted(codes) == [0, 1, 2, 3, 4, 5, 6]
    text = (DOCS / "cli.md").read_text()
    for code in codes:
        assert re.search(rf"^\| {code} \| ", text, re.M)


def test_help_paragraphs_marked_no_rewrap_become_code_blocks() -> None:
    lines = docgen._help_markdown("Intro text\nwrapped.\n\n\b\n  cidrx a\n  cidrx b\n\nAfter.")
    assert lines == ["Intro text wrapped.", "", "```", "cidrx a\ncidrx b", "```", "", "After.", ""]


# --- findings ---------------------------------------------------------------------------------------------


def test_every_finding_id_in_the_code_has_a_meaning() -> None:
    ids = {s.id for s in docgen.finding_sites()}
    missing = sorted(ids - set(docgen.MEANINGS))
    assert not missing, f"add a one-line meaning for {missing} to MEANINGS in cidrx/docgen.py"


def test_no_meaning_is_kept_for_an_id_the_code_no_longer_raises() -> None:
    ids = {s.id for s in docgen.finding_sites()}
    assert not set(docgen.MEANINGS) - ids


def test_the_scanner_misses_no_id_literal() -> None:
    """Every id-shaped literal in the source is an id the Finding scanner resolved (an id built elsewhere and
    passed in a variable would show up here and fail)."""
    found = {s.id for s in docgen.finding_sites()}
    assert docgen.id_literals() <= found, docgen.id_literals() - found


def test_ids_are_stable_shaped_and_severities_known() -> None:
    for site in docgen.finding_sites():
        assert docgen.ID_RE.match(site.id), site
        assert site.severities and set(site.severities) <= {"critical", "warning", "info"}, site


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


def test_scanner_refuses_an_id_it_cannot_resolve(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg" / "prov"
    pkg.mkdir(parents=True)
    (pkg / "analyze.py").write_text("def f(x):\n    return Finding(x, Severity.INFO, 's', 'summary')\n")
    with pytest.raises(docgen.DocgenError, match=r"analyze.py:2"):
        docgen.finding_sites(tmp_path / "pkg")


def test_scanner_follows_a_local_severity_variable(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg" / "prov"
    pkg.mkdir(parents=True)
    (pkg / "analyze.py").write_text(
        "ID = 'PROV-THING'\n"
        "def f(full):\n"
        "    sev = Severity.CRITICAL if full else Severity.WARNING\n"
        "    return Finding(id=ID, severity=sev, subject='s', summary='x')\n"
    )
    (site,) = docgen.finding_sites(tmp_path / "pkg")
    assert (site.id, site.severities) == ("PROV-THING", ("critical", "warning"))


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
    assert uploads and "plan.json" in uploads[0]["with"]["path"]


def test_gitlab_recipe_makes_apply_manual_in_an_environment() -> None:
    doc: dict[str, Any] = yaml.safe_load((DOCS / "ci" / "gitlab-ci.yml").read_text())
    apply = doc["cidrx-apply"]
    assert apply["environment"]["name"] == "cidrx-apply"
    assert all(rule.get("when") == "manual" for rule in apply["rules"])
    assert "plan.json" in doc["cidrx-plan"]["artifacts"]["paths"]


def test_ci_page_embeds_the_recipe_files_verbatim() -> None:
    page = (DOCS / "ci.md").read_text()
    for name in ("github-workflow.yml", "gitlab-ci.yml"):
        assert (DOCS / "ci" / name).read_text().strip() in page, f"docs/ci.md must embed docs/ci/{name} as is"


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
    """docgen imports every provider; the CLI must not pay for it (DESIGN.md §2: --help stays fast)."""
    for path in (ROOT / "cidrx" / "cli").glob("*.py"):
        tree = ast.parse(path.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}
        mods = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "cidrx.docgen" not in mods and "docgen" not in names, path
