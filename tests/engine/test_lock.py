"""The plan lock (cidrx.engine.lock): the file lock beside the plan and the Lease in the cluster, each refusing a
second holder with exit 8 naming the first, a dead holder's expired Lease taken over, `--wait-for-lock`
polling through the engine's waiter (a fake clock: nothing sleeps), all through the real Kubernetes client
against the fake API server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cidrx.engine.lock import FileLock, LeaseLock, identity, lease_name, plan_lock, process_start
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


def test_the_lock_file_does_not_outlive_its_holder(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.json"
    lock = FileLock(plan_path, "me")
    assert lock.try_acquire() is None and (tmp_path / "plan.json.lock").exists()
    lock.release()
    assert list(tmp_path.iterdir()) == []


def test_a_lock_file_left_by_a_killed_run_is_taken_and_removed(tmp_path: Path) -> None:
    # SIGKILL leaves the file (the kernel drops the flock): the next run takes it at once, and says so.
    (tmp_path / "plan.json.lock").write_text('{"holder": "host/pid 1/plan p", "since": "then"}\n')
    notes: list[str] = []
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with plan_lock(make_plan(), tmp_path / "plan.json", leases=None, wait=None, waiter=waiter, note=notes.append):
        pass
    assert notes == [
        f"took over host/pid 1/plan p since then (file lock {tmp_path / 'plan.json.lock'}), whose run ended "
        "without releasing it; resuming from the journal and the plan's tags"
    ]
    assert list(tmp_path.iterdir()) == []


def test_a_lock_removed_between_open_and_flock_is_not_held_on_the_old_inode(tmp_path: Path) -> None:
    import fcntl
    import os

    plan_path = tmp_path / "plan.json"
    first = FileLock(plan_path, "first")
    assert first.try_acquire() is None
    stale = os.open(tmp_path / "plan.json.lock", os.O_RDWR)  # a second run opened the file before release
    first.release()
    fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)  # ...and now locks the removed inode
    third = FileLock(plan_path, "third")
    assert third.try_acquire() is None  # the path is a new file: not blocked by the unnamed inode
    second = FileLock(plan_path, "second")
    holder = second.try_acquire()
    assert holder is not None and holder.identity == "third"
    os.close(stale)
    third.release()


def test_plan_lock_leaves_no_file_after_a_failing_body(tmp_path: Path) -> None:
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with (
        pytest.raises(RuntimeError),
        plan_lock(make_plan(), tmp_path / "plan.json", leases=None, wait=None, waiter=waiter, note=lambda _: None),
    ):
        raise RuntimeError("the run failed")
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(proc.stdout)


def test_a_live_lease_of_a_gone_process_on_this_host_is_taken_over(
    kube_server: FakeKubeServer, leases: KubeLeases
) -> None:
    import socket

    plan = make_plan()
    gone = f"{socket.gethostname()}/pid {_dead_pid()}/plan p"
    seed_lease(kube_server, plan, gone, NOW)  # renewed just now: not expired
    lock = LeaseLock(leases, plan, f"{socket.gethostname()}/pid 1/plan p", now=lambda: NOW)
    assert lock.try_acquire() is None
    assert lock.taken_over is not None and lock.taken_over.identity == gone
    assert lock.taken_over_why == "whose process is gone from this host"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="process start times come from Linux's /proc")
def test_a_lease_naming_a_reused_pid_is_taken_over_and_the_real_holder_refused(
    kube_server: FakeKubeServer, leases: KubeLeases
) -> None:
    """The pid of a killed run can be given to another process: the start time in the identity tells them apart."""
    import os
    import socket

    from cidrx.engine.lock import process_start

    plan = make_plan()
    parent = os.getppid()
    real = process_start(parent)
    assert real is not None
    ticks, _, boot = real.partition("@")
    reused = f"{socket.gethostname()}/pid {parent}/plan p/start {int(ticks) + 1}@{boot}"  # alive, but not it
    seed_lease(kube_server, plan, reused, NOW)
    lock = LeaseLock(leases, plan, identity(plan), now=lambda: NOW)
    assert lock.try_acquire() is None
    assert lock.taken_over is not None and lock.taken_over.identity == reused
    assert lock.taken_over_why == f"whose process is gone from this host (pid {parent} now belongs to another process)"
    lock.release()

    held = f"{socket.gethostname()}/pid {parent}/plan p/start {real}"  # the very process: refused
    seed_lease(kube_server, plan, held, NOW)
    holder = LeaseLock(leases, plan, identity(plan), now=lambda: NOW).try_acquire()
    assert holder is not None and holder.identity == held


def test_the_identity_names_the_process_start_on_linux() -> None:
    import os

    me = identity(make_plan())
    assert f"/pid {os.getpid()}/plan " in me
    if Path("/proc/self/stat").exists():
        assert me.rpartition("/start ")[2] == process_start(os.getpid())


def test_a_live_lease_of_a_running_process_on_this_host_is_refused(
    kube_server: FakeKubeServer, leases: KubeLeases
) -> None:
    import os
    import socket

    plan = make_plan()
    alive = f"{socket.gethostname()}/pid {os.getppid()}/plan p"
    seed_lease(kube_server, plan, alive, NOW)
    holder = LeaseLock(leases, plan, f"{socket.gethostname()}/pid 1/plan p", now=lambda: NOW).try_acquire()
    assert holder is not None and holder.identity == alive


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_a_5xx_on_a_lease_write_is_re_read_and_never_exit_1(
    tmp_path: Path, kube_server: FakeKubeServer, leases: KubeLeases, method: str
) -> None:
    plan = make_plan()
    kube_server.inject(503, method=method, path_contains="/leases", times=2)
    notes: list[str] = []
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with plan_lock(plan, tmp_path / "plan.json", leases=leases, wait=None, waiter=waiter, note=notes.append):
        assert lease_of(kube_server, plan) is not None
    assert lease_of(kube_server, plan) is None and notes == []
    assert not (tmp_path / "plan.json.lock").exists()


def test_a_lease_create_failing_every_time_is_exit_7(
    tmp_path: Path, kube_server: FakeKubeServer, leases: KubeLeases
) -> None:
    from cidrx.errors import RetriesExhausted

    plan = make_plan()
    kube_server.inject(503, method="POST", path_contains="/leases", times=None)
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with (
        pytest.raises(RetriesExhausted) as failed,
        plan_lock(plan, tmp_path / "plan.json", leases=leases, wait=None, waiter=waiter, note=lambda _: None),
    ):
        pass
    assert failed.value.exit_code == ExitStatus.RETRY_LATER
    assert not (tmp_path / "plan.json.lock").exists()


def test_a_final_release_failing_every_time_is_a_warning(
    tmp_path: Path, kube_server: FakeKubeServer, leases: KubeLeases
) -> None:
    plan = make_plan()
    notes: list[str] = []
    clock = FakeClock()
    waiter = Waiter(sleep=clock.sleep, monotonic=clock.monotonic)
    with plan_lock(plan, tmp_path / "plan.json", leases=leases, wait=None, waiter=waiter, note=notes.append):
        kube_server.inject(503, method="DELETE", path_contains="/leases", times=None)
    assert len(notes) == 1 and notes[0].startswith("warning: could not release Lease kube-system/cidrx-plan-")
    assert not (tmp_path / "plan.json.lock").exists()
    kube_server.clear_faults()
