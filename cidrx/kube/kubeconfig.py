"""Kubeconfig resolution as kubectl does it: which files, merged how, which context.

Why it exists: fleet mode lists contexts and the CLI names the current one without connecting, and the
client connects with the same resolution; none of that needs the client library, which only turns the
chosen context into connection settings (cidrx.kube.api.load_config).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cidrx.errors import CidrxError
from cidrx.kube.errors import KubeUnavailable, one_line
from cidrx.model.findings import KUBECONFIG_FROM_ENV

JSON = dict[str, Any]
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")

_PATH_KEYS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


def read_kubeconfig(path: Path) -> JSON:
    import yaml

    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise KubeUnavailable(f"cannot read kubeconfig {path}: {one_line(str(exc))}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KubeUnavailable(f"kubeconfig {path} is not a kubeconfig (expected a mapping)")
    return doc


def merge_kubeconfigs(paths: Sequence[Path]) -> JSON:
    """Merge like kubectl: the first file to define a name (or current-context) wins.

    Relative file paths inside each file are made absolute against that file's directory.
    """
    merged: JSON = {"clusters": [], "contexts": [], "users": []}
    seen: dict[str, set[str]] = {"clusters": set(), "contexts": set(), "users": set()}
    for path in paths:
        doc = read_kubeconfig(path)
        if not merged.get("current-context") and doc.get("current-context"):
            merged["current-context"] = doc["current-context"]
        for section, inner in (("clusters", "cluster"), ("contexts", "context"), ("users", "user")):
            for entry in doc.get(section) or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                    continue
                if entry["name"] in seen[section]:
                    continue
                seen[section].add(entry["name"])
                body = dict(entry.get(inner) or {})
                for key in _PATH_KEYS.get(inner, ()):
                    if isinstance(body.get(key), str) and not Path(body[key]).expanduser().is_absolute():
                        body[key] = str(path.parent / body[key])
                merged[section].append({"name": entry["name"], inner: body})
    return merged


def kubeconfig_paths(kubeconfig: str | None) -> tuple[list[Path], str] | None:
    """Explicit path, else $KUBECONFIG (a path list), else ~/.kube/config; None when there is none."""
    if kubeconfig:
        path = Path(kubeconfig).expanduser()
        if not path.is_file():
            raise KubeUnavailable(f"kubeconfig {kubeconfig} not found")
        return [path], str(path)
    env = os.environ.get("KUBECONFIG", "")
    if env:
        paths = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        existing = [p for p in paths if p.is_file()]
        if not existing:
            raise KubeUnavailable(f"no file named by $KUBECONFIG={env} exists")
        return existing, os.pathsep.join(str(p) for p in existing)
    default = Path("~/.kube/config").expanduser()
    if default.is_file():
        return [default], str(default)
    return None


def tried(kubeconfig: str | None, context: str | None) -> str:
    """What standard resolution used, in words for a message: "tried $KUBECONFIG=/a:/b, context prod"."""
    env = os.environ.get("KUBECONFIG", "")
    if kubeconfig:
        where = f"--kubeconfig {kubeconfig}"
    elif env:
        where = f"{KUBECONFIG_FROM_ENV}{env}"
    elif Path("~/.kube/config").expanduser().is_file():
        where = "~/.kube/config"
    else:
        where = "the in-cluster service account" if in_cluster() else "no kubeconfig"
    name = context or current_context(kubeconfig)
    return f"tried {where}" + (f", context {name}" if name else "")


def in_cluster() -> bool:
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST")) and (SERVICE_ACCOUNT / "token").is_file()


def current_context(kubeconfig: str | None) -> str | None:
    """The name of the context standard resolution would use without --context ("in-cluster" in a pod with
    no kubeconfig); None when there is no usable kubeconfig (collection then says why)."""
    try:
        found = kubeconfig_paths(kubeconfig)
        if found is None:
            return "in-cluster" if in_cluster() else None
        name = merge_kubeconfigs(found[0]).get("current-context")
    except CidrxError:
        return None
    return str(name) if name else None


def list_contexts(kubeconfig: str | None) -> list[str]:
    """Names of every context of the kubeconfig that standard resolution finds (explicit path, else
    $KUBECONFIG merged like kubectl, else ~/.kube/config), in file order; KubeUnavailable when there is
    no kubeconfig at all (a pod's service account has no contexts)."""
    found = kubeconfig_paths(kubeconfig)
    if found is None:
        raise KubeUnavailable(
            "no kubeconfig: --kubeconfig not given, $KUBECONFIG not set and ~/.kube/config missing",
            hint="pass --kubeconfig PATH",
        )
    return [str(c["name"]) for c in merge_kubeconfigs(found[0])["contexts"]]
