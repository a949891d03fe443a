"""The layout rules of cidrx/, read from the source with `ast`: what import-linter cannot say.

Why it exists: a plugin (a cloud, an IPAM, a strategy) must be one package plus one line in the registry, and
the shared layers must keep working without knowing it. These tests hold the rules that make that true:
(a) no module imports another module's private names; (b) no import cycles between modules, counting the
imports under `if TYPE_CHECKING:` and inside functions; (c) the shared layers name no plugin (the words come
from the registry's declarations); (d) the model imports no plugin, not even for type checking; (e) every
plugin package's `__init__` declares `SPEC` and `STRATEGIES` and imports nothing but `cidrx.registry`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from cidrx import registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "cidrx"
# The layers every plugin plugs into (DESIGN of the repository: docs/architecture.md).
SHARED_LAYERS = ("kube", "engine", "render", "model", "app", "cli", "transport")
# Words of the EKS plugin that its declaration does not spell: the VPC CNI's CRD, DaemonSet and provisioner.
EKS_WORDS = ("eniconfig", "aws-node", "karpenter")


@dataclass(frozen=True)
class Module:
    name: str  # cidrx.engine.apply
    path: Path

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    @property
    def where(self) -> str:
        return self.path.relative_to(ROOT).as_posix()


@cache
def modules() -> tuple[Module, ...]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(Module(".".join(parts), path))
    return tuple(found)


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def absolute(module: Module, node: ast.ImportFrom) -> str:
    """The module an `from X import ...` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.name.split(".")
    if not module.is_package:
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports(module: Module) -> Iterator[tuple[int, str, list[str]]]:
    """(line, imported module, names) of every import anywhere in the module: top level, functions and
    `if TYPE_CHECKING:` alike."""
    for node in ast.walk(tree(module.path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node.lineno, absolute(module, node), [a.name for a in node.names]


# --- (a) private names ------------------------------------------------------------------------------------------


def private_imports() -> list[str]:
    out = []
    for m in modules():
        for line, target, names in imports(m):
            if not target.startswith("cidrx"):
                continue
            for name in names:
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    out.append(f"{m.where}:{line} from {target} import {name}")
    return out


def test_no_module_imports_another_modules_private_names() -> None:
    found = private_imports()
    assert not found, f"{len(found)} private imports across modules:\n" + "\n".join(found)


# --- (b) import cycles ------------------------------------------------------------------------------------------


def graph() -> dict[str, set[str]]:
    """module -> the cidrx modules it imports (`from cidrx.a import b` names cidrx.a.b when that is a module)."""
    known = {m.name for m in modules()}
    edges: dict[str, set[str]] = {m.name: set() for m in modules()}
    for m in modules():
        for _line, target, names in imports(m):
            if target not in known:
                continue
            subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
            plain = [n for n in names if f"{target}.{n}" not in known]
            edges[m.name].update(subs)
            if plain or not names:
                edges[m.name].add(target)
        edges[m.name].discard(m.name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [one_cycle(edges, c) for c in components]


def one_cycle(edges: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, inside the component."""
    inside, start = set(component), component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v] & inside):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c", "a"]]


def test_no_import_cycles_between_modules() -> None:
    found = cycles(graph())
    assert not found, f"{len(found)} import cycles:\n" + "\n".join(" -> ".join(c) for c in found)


def package_of(module: str) -> str:
    """The package a module belongs to: its parent, or itself for a package's `__init__`."""
    return (
        module if module in {m.name for m in modules() if m.path.name == "__init__.py"} else module.rpartition(".")[0]
    )


def test_no_import_cycles_between_packages() -> None:
    """Packages (cidrx.model, cidrx.kube, cidrx.providers.eks.actions, ...) import each other one way only, also
    counting `TYPE_CHECKING` imports: a package cycle is a layer that imports upward."""
    edges: dict[str, set[str]] = {}
    for module, targets in graph().items():
        source = package_of(module)
        edges.setdefault(source, set())
        for target in targets:
            package = package_of(target)
            edges.setdefault(package, set())
            # A package's own `__init__` declarations are read by its submodules; that is no cycle.
            if package != source and not source.startswith(f"{package}."):
                edges[source].add(package)
    found = cycles(edges)
    assert not found, f"{len(found)} package cycles:\n" + "\n".join(" -> ".join(c) for c in found)


# --- (c) the shared layers name no plugin ---------------------------------------------------------------------


def plugin_words() -> dict[str, str]:
    """word -> the plugin it belongs to: every registered spec's name, title and API groups, and EKS_WORDS.

    Not the in-cluster provider's (`--k8s`, "Kubernetes"): that plugin is the platform with no cloud around
    it, and "Kubernetes" is what the kube layer is the client of, so its name is no plugin's word."""
    words: dict[str, str] = {}
    for spec in [*registry.providers(), *registry.ipams()]:
        if getattr(spec, "in_cluster", False):
            continue
        for word in (spec.name, spec.title, *getattr(spec, "api_groups", ())):
            words.setdefault(word.lower(), spec.name)
    for word in EKS_WORDS:
        words.setdefault(word, "eks")
    return words


CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def named_plugins(text: str, words: dict[str, str]) -> list[str]:
    """The words `text` holds as words of its own: in prose, in snake_case and CamelCase names, plural too
    (`eks_section`, `EksSection`, `eniconfigs`, `EniConfig` for "eniconfig")."""
    spaced = CAMEL.sub(" ", text)
    found = []
    for word in sorted(words, key=len, reverse=True):
        pattern = rf"(?<![A-Za-z0-9]){re.escape(word)}(s|es)?(?![A-Za-z0-9])"
        if any(re.search(pattern, t, re.IGNORECASE) for t in (text, spaced)):
            found.append(word)
    return found


# Layers whose help texts and examples may name a cloud target's flag (`cidrx diagnose --eks --region R ...`):
# what a person types is spelled out for them there. No other plugin word (an IPAM, an API group, the VPC
# CNI's objects) may appear, and the layers below them name no provider at all.
NAMING_TARGETS = ("cli", "app")


def plugin_mentions() -> dict[str, list[str]]:
    """shared-layer file -> "word (line N)" for each plugin word it holds, at its first line."""
    words = plugin_words()
    providers = {p.name for p in registry.providers()}
    out: dict[str, list[str]] = {}
    for layer in SHARED_LAYERS:
        held = {w: o for w, o in words.items() if layer not in NAMING_TARGETS or w not in providers}
        for path in sorted((PACKAGE / layer).rglob("*.py")):
            lines = path.read_text().splitlines()
            found = []
            for word in named_plugins("\n".join(lines), held):
                first = next(i for i, line in enumerate(lines, 1) if named_plugins(line, {word: ""}))
                found.append(f"{word} (line {first})")
            if found:
                out[path.relative_to(ROOT).as_posix()] = found
    return out


def test_plugin_words_come_from_the_registry() -> None:
    words = plugin_words()
    for spec in registry.ipams():
        assert spec.name in words and all(g in words for g in spec.api_groups)
    assert {"eniconfig", "aws-node", "karpenter"} <= set(words)
    assert "k8s" not in words and "kubernetes" not in words  # the platform itself (see plugin_words)
    assert named_plugins("# reads the aws-node DaemonSet", words) == ["aws-node"]
    assert named_plugins("x: EksSection = eks_section", {"eks": "eks"}) == ["eks"]
    assert named_plugins("eniconfigs: tuple[EniConfig, ...]", {"eniconfig": "eks"}) == ["eniconfig"]
    assert named_plugins("weeks = checks(socks_stuff)", {"eks": "eks"}) == []


def test_the_shared_layers_name_no_plugin() -> None:
    found = plugin_mentions()
    assert not found, f"{len(found)} shared-layer modules name plugins:\n" + "\n".join(
        f"{path}: {', '.join(words)}" for path, words in found.items()
    )


# --- (d) the model imports no plugin --------------------------------------------------------------------------


def plugin_prefixes() -> tuple[str, ...]:
    return (*registry.PACKAGES, "cidrx.providers", "cidrx.ipam")


def model_plugin_imports() -> list[str]:
    out = []
    for m in modules():
        if not m.name.startswith("cidrx.model"):
            continue
        for line, target, _names in imports(m):
            if any(target == p or target.startswith(f"{p}.") for p in plugin_prefixes()):
                out.append(f"{m.where}:{line} imports {target}")
    return out


def test_the_model_imports_no_plugin_even_for_type_checking() -> None:
    found = model_plugin_imports()
    assert not found, "\n".join(found)


# --- (e) the plugin packages declare themselves cheaply ---------------------------------------------------------


def declaration_problems(package: str) -> list[str]:
    path = PACKAGE.parent / package.replace(".", "/") / "__init__.py"
    if not path.exists():
        return [f"{package}: no __init__.py"]
    module = Module(package, path)
    problems = []
    assigned = set()
    for node in tree(path).body:
        if isinstance(node, ast.Assign):
            assigned |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            assigned.add(node.target.id)
    problems += [f"{module.where} declares no {name}" for name in ("SPEC", "STRATEGIES") if name not in assigned]
    for line, target, names in imports(module):
        if target in ("__future__", "cidrx.registry") or (target == "cidrx" and names == ["registry"]):
            continue
        problems.append(f"{module.where}:{line} imports {target}")
    return problems


@pytest.mark.parametrize("package", registry.PACKAGES)
def test_every_plugin_package_declares_itself_importing_only_the_registry(package: str) -> None:
    problems = declaration_problems(package)
    assert not problems, "\n".join(problems)
