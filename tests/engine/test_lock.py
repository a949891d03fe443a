"""The plan lock (cidrx.engine.lock): the file lock beside the plan and the Lease in the cluster, each refusing a
second holder with exit 8 naming the first, a dead holder's expired Lease taken over, `--wait-for-lock`
polling through the engine's waiter (a fake clock: nothing sleeps), all through the real Kubernetes client
against the fake API server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cidrx.engine.lock import FileLock, LeaseLock, lease_name, plan_lock
from cidrx.engine.waiting import Waiter
from cidrx.errors import ExitStatus, LockHeld
from cidrx.kube.api import KubeApi
from cidrx.kube.leases import LEASE, KubeLeases
from cidrx.model.plan import Plan, Step
from cidrx.model.target import Target
from tests.support.engine import FakeClock, small_plan
from tests.support.fakes.kube_server import FakeKubeServer

NOW = datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC)


def make_plan() -> Plan:
    target = Target("eks", "demo", region="ap-southeast-2")
    return small_plan(target, "custom-networking", Step("vpc-cidr", "eks.associate-vpc-cidr", {}, "associate"))


@pytest.fixture
def leases(kubeconfig_path: Path) -> Iterator[KubeLeases]:
    with KubeApi(str(kubeconfig_path), None) as kube:
        yield KubeLeases(kube)


def lease_of(server: FakeKubeServer, plan: Plan) -> dict[str, object] | None:
    return server.get(*LEASE[:3], lease_name(plan), "kube-system")


def seed_lease(server: FakeKubeServer, plan: Plan, holder: str, renewed: datetime) -> None:
    t = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    server.put(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": lease_name(plan), "namespace": "kube-system"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 60, "acquireTime": t, "renewTime": t},
        }
    )


def test_a_second_file_lock_is_refused_naming_the_holder_until_released(tmp_path: Path) -> None:
    first, second = FileLock(tmp_path / "plan.json", "ci-1/pid 10/plan x"), FileLock(tmp_path / "plan.json", "b")
    assert first.try_acquire() is None
    holder = second.try_acquire()
    assert holder is not None and holder.identity == "ci-1/pid 10/plan x" and holder.since
    assert "plan.json.lock" in holder.describe()
    first.release()
    assert second.try_acquire() is None
    second.release()


def test_the_lease_is_created_refused_to_another_and_released(kube_server: FakeKubeServer, leases: KubeLeases) -> None:
    plan = make_plan()
    mine = LeaseLock(leases, plan, "host-a/pid 1/plan p", now=lambda: NOW)
    assert mine.try_acquire() is None
    lease = lease_of(kube_server, plan)
    assert lease is not None and lease["spec"]["holderIdentity"] == "host-a/pid 1/plan p"  # type: ignore[index]
    other = LeaseLock(leases, plan, "host-b/pid 2/plan p", now=lambda: NOW + timedelta(seconds=30))
    holder = other.try_acquire()
    assert holder is not None and holder.identity == "host-a/pid 1/plan p"
    assert f"Lease kube-system/{lease_name(plan)}" in holder.describe()
    mine.renew()
    assert mine.lost is None
    mine.release()
    assert lease_of(kube_server, plan) is None
    assert other.try_acquire() is None


def test_an_expired_lease_is_taken_over_with_a_guarded_update(kube_server: FakeKubeServer, leases: KubeLeases) -> None:
    plan = make_plan()
    seed_lease(kube_server, plan, "dead-host/pid 9/plan p", NOW - timedelta(seconds=61))
    before = lease_of(kube_server, plan)
    assert before is not None
    lock = LeaseLock(leases, plan, "host-a/pid 1/plan p", now=lambda: NOW)
    assert lock.try_acquire() is None
    assert lock.taken_over is not None and lock.taken_over.identity == "dead-host/pid 9/plan p"
    after = lease_of(kube_server, plan)
    assert after is not None and after["spec"]["holderIdentity"] == "host-a/pid 1/plan p"  # type: ignore[index]
    updates = [r for r in kube_server.requests() if r.method == "PUT" and "/leases/" in r.path]
    assert len(updates) == 1


def test_a_live_lease_is_not_taken_over(kube_server: FakeKubeServer, leases: KubeLeases) -> None:
    plan = make_plan()
    seed_lease(kube_server, plan, "live-host/pid 9/plan p", NOW - timedelta(seconds=59))
    holder = LeaseLock(leases, plan, "host-a/pid 1/plan p", now=lambda: NOW).try_acquire()
    assert holder is not None and holder.identity == "live-host/pid 9/plan p"


def test_renewal_notices_a_lease_taken_by_another(kube_server: FakeKubeServer, leases: KubeLeases) -> None:
    plan = make_plan()
    lock = LeaseLock(leases, plan, "host-a/pid 1/plan p", now=lambda: NOW)
    assert lock.try_acquire() is None
    seed_lease(kube_server, plan, "host-b/pid 2/plan p", NOW)
    lock.renew()
    assert lock.lost is not None and "host-b/pid 2" in lock.lost
    lock.release()  # not ours any more: left alone
    assert lease_of(kube_server, plan) is not None


def test_plan_lock_refuses_at_once_with_exit_8(tmp_path: Path, kube_server: FakeKubeServer, leases: KubeLeases) -> None:
    plan = make_plan()
    seed_lease(kube_server, plan, "ci-7/pid 4/plan p", datetime.now(UTC))
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with (
        pytest.raises(LockHeld) as refused,
        plan_lock(plan, tmp_path / "plan.json", leases=leases, wait=None, waiter=waiter, note=lambda _: None),
    ):
        pass
    assert refused.value.exit_code == ExitStatus.LOCKED == 8
    assert "ci-7/pid 4/plan p" in str(refused.value) and clock.sleeps == []
    # The file lock taken before the Lease was refused is released: a later run is not blocked by it.
    assert FileLock(tmp_path / "plan.json", "x").try_acquire() is None


def test_wait_for_lock_polls_until_the_holder_is_gone(tmp_path: Path) -> None:
    plan = make_plan()
    holder = FileLock(tmp_path / "plan.json", "ci-1/pid 3/plan p")
    assert holder.try_acquire() is None
    polls: list[float] = []
    clock = FakeClock(on_sleep=lambda: holder.release() if len(polls) == 2 else polls.append(1))
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    notes: list[str] = []
    with plan_lock(plan, tmp_path / "plan.json", leases=None, wait=120, waiter=waiter, note=notes.append):
        assert FileLock(tmp_path / "plan.json", "y").try_acquire() is not None  # held by us now
    assert len(clock.sleeps) == 3 and any("ci-1/pid 3" in n for n in notes)


def test_wait_for_lock_gives_up_with_exit_8_after_its_seconds(tmp_path: Path) -> None:
    plan = make_plan()
    holder = FileLock(tmp_path / "plan.json", "ci-1/pid 3/plan p")
    assert holder.try_acquire() is None
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with (
        pytest.raises(LockHeld, match=r"after waiting 30s: ci-1/pid 3/plan p"),
        plan_lock(plan, tmp_path / "plan.json", leases=None, wait=30, waiter=waiter, note=lambda _: None),
    ):
        pass
    assert clock.slept == 30
    holder.release()


def test_a_forbidden_lease_is_exit_6_naming_the_grant_and_the_file_lock_is_released(
    tmp_path: Path, kube_server: FakeKubeServer, leases: KubeLeases
) -> None:
    from cidrx.errors import AccessDenied

    plan = make_plan()
    kube_server.inject(403, method="POST", path_contains="/leases", times=None, reason="Forbidden")
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with (
        pytest.raises(AccessDenied, match="cannot create leases") as denied,
        plan_lock(plan, tmp_path / "plan.json", leases=leases, wait=None, waiter=waiter, note=lambda _: None),
    ):
        pass
    assert denied.value.exit_code == ExitStatus.ACCESS and "coordination.k8s.io" in str(denied.value)
    assert FileLock(tmp_path / "plan.json", "x").try_acquire() is None
