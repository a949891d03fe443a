"""The live estates the conformance cases run their strategies against, seen through one interface.

Why it exists: tests/conformance drives every registered strategy through plan, drift, apply, resume,
rollback and permissions with the same test code, so each kind of estate (EKS in moto with its cluster in the
fake Kubernetes API server, GKE in the loopback GCP fake, a plain cluster in the fake API server) is wrapped
here in a `Live` that says how the CLI reaches it (`target`, `access`), which writes it received, and how to
interrupt a run right after one write took effect (Ctrl-C before the run hears back: a crashed apply).
They only wrap the builders of tests/support (eks_estate, gke_world, the fake servers); nothing here knows
a strategy.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run
from tests.support.estates import aks as aw
from tests.support.estates import gke as gw
from tests.support.estates.eks import AwsCalls, World, build_incident
from tests.support.estates.eks_live import EksEstate, eks_estate
from tests.support.fakes.arm_server import FakeArm
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer, is_lock

JSON = dict[str, Any]
WRITES = ("POST", "PUT", "PATCH", "DELETE")
# Snapshot fields that differ between two reads of an unchanged estate, or that a write and its undo move on
# without changing what is there (a resourceVersion, a GCP fingerprint, the time of the read).
# An Azure etag moves on with every write to a resource or its children.
VOLATILE = frozenset(
    {"taken_at", "fingerprint", "resource_version", "resourceVersion", "created", "createTime", "etag"}
)


def scrub(value: Any) -> Any:
    """`value` without VOLATILE fields; a container's env as a set (a rollback restores a variable's value,
    not its place in the list, and the CNI reads it by name)."""
    if isinstance(value, dict):
        out = {k: scrub(v) for k, v in sorted(value.items()) if k not in VOLATILE}
        if isinstance(out.get("env"), list) and all(isinstance(e, dict) and "name" in e for e in out["env"]):
            out["env"] = sorted(out["env"], key=lambda e: e["name"])
        return out
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def drop_disassociated(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: drop_disassociated(v) for k, v in value.items()}
    if isinstance(value, list):
        kept = [v for v in value if not (isinstance(v, dict) and v.get("state") == "disassociated")]
        return [drop_disassociated(v) for v in kept]
    return value


def kube_writes(server: FakeKubeServer) -> list[str]:
    return [f"kube {r.method} {r.path}" for r in server.requests() if r.method in WRITES and not is_lock(r)]


def interrupt_after_write(fake: FakeKubeServer | FakeGcp | FakeArm, method: str, path_contains: str) -> None:
    """The next successful `method` request whose path holds `path_contains` is carried out by `fake`, then
    the main thread (the CLI running in process) gets a Ctrl-C: it is raised as soon as the client reads the
    answer, so the write took effect and the run never journals it (as a process killed at that moment)."""
    real = fake.answer

    def answer(m: str, path: str, content_type: str, body: bytes) -> Any:
        response = real(m, path, content_type, body)
        if m == method and path_contains in path and 200 <= response.status < 300:
            del fake.answer  # type: ignore[method-assign]  # once: back to the class's own
            _thread.interrupt_main()
        return response

    fake.answer = answer  # type: ignore[method-assign]


def clean_env(mp: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            mp.delenv(name)


@dataclass
class Live:
    """One live estate: `target` names it on `--plan` (and `snapshot`), `access` is what `--apply` and
    `rollback` are given besides the plan (the plan file carries its target)."""

    tmp: Path
    target: list[str]
    access: list[str]
    rollback_access: list[str]
    kube: FakeKubeServer | None = None

    def writes(self) -> list[str]:
        return kube_writes(self.kube) if self.kube is not None else []

    def reset_log(self) -> None:
        if self.kube is not None:
            self.kube.reset_log()

    def settle(self) -> None:
        """What time does while nobody watches: operations a stopped run started finish."""

    def interrupt_after(self, where: str, method: str, path_contains: str) -> None:
        """Ctrl-C right after the next matching write took effect (see `interrupt_after_write`)."""
        if where != "kube" or self.kube is None:
            raise AssertionError(f"this estate has no {where} side to interrupt a write of")
        interrupt_after_write(self.kube, method, path_contains)

    def state(self) -> JSON:
        """What `cidrx snapshot` reads of the estate, without what moves on by itself (see VOLATILE)."""
        path = self.tmp / "state.snapshot.json"
        made = run("snapshot", *self.target, "--out", str(path))
        assert made.exit_code == 0, made.output
        doc: JSON = json.loads(path.read_text())
        return dict(scrub(doc))


# --- EKS: moto in process, the incident cluster in the fake Kubernetes API server ---------------------------


class InterruptAfterAws:
    """In front of moto's stub: right after moto carried out the armed operation, Ctrl-C (the cloud took the
    write, the run that sent it never hears back)."""

    def __init__(self) -> None:
        self.armed: str | None = None

    def wrap(self, stub: Callable[..., Any]) -> Callable[..., Any]:
        def handler(event_name: str, request: Any, **kwargs: Any) -> Any:
            answer = stub(event_name=event_name, request=request, **kwargs)
            if self.armed is not None and event_name.endswith(f".{self.armed}"):
                self.armed = None
                raise KeyboardInterrupt
            return answer

        handler.moto_stub = getattr(stub, "moto_stub", stub)  # type: ignore[attr-defined]
        return handler


@dataclass
class EksLive(Live):
    estate: EksEstate | None = None
    aws: AwsCalls = field(default_factory=AwsCalls)
    interrupter: InterruptAfterAws = field(default_factory=InterruptAfterAws)

    @property
    def world(self) -> World:
        assert self.estate is not None
        return self.estate.world

    def writes(self) -> list[str]:
        return [*self.aws.writes(), *super().writes()]

    def reset_log(self) -> None:
        self.aws.calls.clear()
        super().reset_log()

    def settle(self) -> None:
        addons = self.estate.addons if self.estate is not None else None
        if addons is None:
            return
        for entry in addons.updates.values():
            if entry["update"]["status"] == "InProgress":
                entry["update"]["status"] = "Successful"
                addons.addons[(entry["cluster"], entry["addon"])]["status"] = "ACTIVE"

    def state(self) -> JSON:
        """As Live's, without VPC CIDR associations in state `disassociated`: EC2 lists an association it
        removed for a while after DisassociateVpcCidrBlock (moto keeps it), which is the CIDR being gone."""
        return dict(drop_disassociated(super().state()))

    def interrupt_after(self, where: str, method: str, path_contains: str) -> None:
        if where == "aws":
            self.interrupter.armed = method  # the operation name, e.g. CreateSubnet
            return
        super().interrupt_after(where, method, path_contains)


def eks(
    builder: Callable[..., World] = build_incident, *, seed: int | None = 2023_11_04, **options: Any
) -> Callable[[Path, pytest.MonkeyPatch], contextlib.AbstractContextManager[Live]]:
    """An EKS estate of `builder`'s world (eks_estate's options pass through; a `wrap_moto` of the case goes in
    front of moto's stub, behind the interrupter)."""
    fake = options.pop("wrap_moto", None)

    @contextlib.contextmanager
    def build(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
        aws, interrupter = AwsCalls(), InterruptAfterAws()
        handlers: Sequence[Any] = [("before-call", aws)]

        def wrap(stub: Callable[..., Any]) -> Callable[..., Any]:
            return interrupter.wrap(fake(stub) if fake is not None else stub)

        with eks_estate(tmp, mp, builder=builder, handlers=handlers, seed=seed, wrap_moto=wrap, **options) as e:
            access = ["--kubeconfig", e.kubeconfig]
            live = EksLive(tmp, e.target, access, access, kube=e.kube, estate=e, aws=aws, interrupter=interrupter)
            live.reset_log()
            yield live

    return build


# --- GKE: the incident in the loopback GCP fake ---------------------------------------------------------------


@dataclass
class GkeLive(Live):
    gcp: FakeGcp | None = None

    def writes(self) -> list[str]:
        assert self.gcp is not None
        cloud = [
            f"{r.method} {r.path}" for r in self.gcp.request_log if r.method in WRITES and "/operations/" not in r.path
        ]
        return [*cloud, *super().writes()]

    def reset_log(self) -> None:
        assert self.gcp is not None
        self.gcp.reset_log()
        super().reset_log()

    def settle(self) -> None:
        assert self.gcp is not None
        self.gcp.finish_operations()

    def interrupt_after(self, where: str, method: str, path_contains: str) -> None:
        if where == "gcp":
            assert self.gcp is not None
            interrupt_after_write(self.gcp, method, path_contains)
            return
        super().interrupt_after(where, method, path_contains)


def gke(
    build: Callable[[FakeGcp], object] = gw.build_incident,
) -> Callable[..., contextlib.AbstractContextManager[Live]]:
    """The GKE estate (`build` seeds the fake). Plans and applies run with --no-kube, as the incident's cluster
    side is not served; rollback is given an empty cluster (it checks that nothing uses what it removes)."""

    @contextlib.contextmanager
    def make(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
        clean_env(mp)
        with gw.gke_estate(mp, build) as fake, FakeKubeServer() as kube:
            target = ["--gke", "--project", gw.PROJECT, "--location", gw.LOCATION, "--cluster", gw.CLUSTER]
            kubeconfig = str(kube.kubeconfig(tmp / "kubeconfig"))
            live = GkeLive(
                tmp, [*target, "--no-kube"], ["--no-kube"], ["--kubeconfig", kubeconfig], kube=kube, gcp=fake
            )
            live.reset_log()
            yield live
        if kube.errors:
            raise kube.errors[0]

    return make


# --- AKS: a cluster of the AKS estates in the loopback ARM fake ------------------------------------------------


@dataclass
class AksLive(Live):
    arm: FakeArm | None = None

    def writes(self) -> list[str]:
        assert self.arm is not None
        return [*self.arm.writes(), *super().writes()]

    def reset_log(self) -> None:
        assert self.arm is not None
        self.arm.reset_log()
        super().reset_log()

    def settle(self) -> None:
        assert self.arm is not None
        self.arm.finish_operations()

    def interrupt_after(self, where: str, method: str, path_contains: str) -> None:
        if where == "arm":
            assert self.arm is not None
            interrupt_after_write(self.arm, method, path_contains)
            return
        super().interrupt_after(where, method, path_contains)


def aks(estate: str) -> Callable[..., contextlib.AbstractContextManager[Live]]:
    """The AKS estate `estate` (tests/support/estates/aks.py ESTATES). Plans and applies run with --no-kube;
    rollback is given an empty cluster (it checks that no node is left in the pool it deletes)."""
    cluster, build, _kube = aw.ESTATES[estate]

    @contextlib.contextmanager
    def make(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
        clean_env(mp)
        with aw.aks_estate(mp, build) as arm, FakeKubeServer() as kube:
            kubeconfig = str(kube.kubeconfig(tmp / "kubeconfig"))
            target = [*aw.target_flags(cluster), "--no-kube"]
            live = AksLive(tmp, target, ["--no-kube"], ["--kubeconfig", kubeconfig], kube=kube, arm=arm)
            live.reset_log()
            yield live
        if kube.errors:
            raise kube.errors[0]

    return make


# --- a plain cluster (--k8s) in the fake Kubernetes API server --------------------------------------------------


def k8s(objects: Callable[[], list[JSON]]) -> Callable[..., contextlib.AbstractContextManager[Live]]:
    """A plain cluster holding `objects()` in the fake API server."""

    @contextlib.contextmanager
    def make(tmp: Path, mp: pytest.MonkeyPatch) -> Iterator[Live]:
        clean_env(mp)
        with FakeKubeServer() as server:
            server.put_many(objects())
            kubeconfig = str(server.kubeconfig(tmp / "kubeconfig"))
            access = ["--kubeconfig", kubeconfig]
            yield Live(tmp, ["--k8s", *access], access, access, kube=server)
        if server.errors:
            raise server.errors[0]

    return make
