"""Exclusive apply: the lock an `expand --apply`, `reclaim --apply` or `rollback` holds on its plan while it runs.

Why it exists: cidrx runs from CI, where a rerun or a second pipeline can start the same apply twice. Unique
names and CIDRs keep two runs from creating duplicates, but both would race through the same steps and one
would fail with a misleading answer. So a run takes two locks before it reads anything:

- a file lock beside the plan (`PLAN.json.lock`, `fcntl.flock`, released by the kernel when the process dies),
  which guards runs on one machine sharing the plan file, always; the file is removed when the run ends;
- a `coordination.k8s.io/v1` Lease in the target cluster (when it has one), which guards runs on different
  machines: `holderIdentity` names host, pid and plan, `renewTime` is renewed by a background thread while
  the run lives, and a Lease whose `renewTime + leaseDurationSeconds` is in the past (its holder died) is
  taken over, and so at once is one whose holder ran on this host and whose process is gone. A pid alone
  does not say that: the kernel reuses pids, and a lock naming a pid that now belongs to another process
  would be kept forever. So on Linux the identity also carries the holder's start time (field 22 of
  /proc/PID/stat, clock ticks since boot) and the boot id (/proc/sys/kernel/random/boot_id): the holder is
  gone when no process with that pid has that start time in this boot. Elsewhere only the pid is checked. Every write is
  guarded by the Lease's resourceVersion, so of two runs racing for it one wins. A write the cluster failed
  (5xx) is decided again after re-reading the Lease; one it keeps failing is exit 7, and a final release
  that fails is a warning (the run's outcome stands; the Lease expires).

A run that finds either lock held refuses at once (LockHeld, exit 8) naming the holder and since when, or
waits `--wait-for-lock` seconds for it, polling through the apply engine's Waiter. The Lease object is
reached through `LeaseClient`, which cidrx.kube.leases implements (the engine imports no Kubernetes client).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from cidrx.engine.waiting import Waiter
from cidrx.errors import ApplyInterrupted, CidrxError, InvalidInput, LockHeld, RetriesExhausted
from cidrx.model import files
from cidrx.model.plan import Plan
from cidrx.transport import retry

JSON = dict[str, Any]
# How long a Lease outlives its holder's last renewal; renewed three times per duration.
LEASE_SECONDS = 60
LEASE_NAMESPACE = "kube-system"
# Reads of the Lease before a write decision; a write the cluster failed is decided again after a re-read.
ATTEMPTS = 6


def lease_name(plan: Plan) -> str:
    """The Lease of `plan`: its id is 16 lowercase hex digits, so the name is a valid DNS-1123 subdomain."""
    return f"cidrx-plan-{plan.plan_id}"


def lock_path(plan_path: str | Path) -> Path:
    return Path(f"{plan_path}.lock")


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
_START = "/start "


def process_start(pid: int) -> str | None:
    """`TICKS@BOOT` naming process `pid` apart from any later process given the same pid: its start time
    (field 22 of /proc/PID/stat, clock ticks after boot, proc(5)) and the first 8 characters of this boot's
    id. None when the process does not exist or /proc cannot tell (not Linux)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = BOOT_ID.read_text().strip()
    except OSError:
        return None
    # Field 2 (comm) is in parentheses and may hold spaces and ')': the fields after it follow the last ')'.
    fields = stat.rpartition(")")[2].split()
    if len(fields) < 20 or not fields[19].isdigit() or not boot:
        return None
    return f"{fields[19]}@{boot[:8]}"


def identity(plan: Plan) -> str:
    """Who holds the lock: host, pid, plan and (on Linux) the process's start, readable in `kubectl get lease`
    and in the refusal."""
    pid = os.getpid()
    start = process_start(pid)
    return f"{socket.gethostname()}/pid {pid}/plan {plan.plan_id}" + (f"{_START}{start}" if start else "")


def holder_process(holder: str) -> tuple[str, int | None]:
    """(host, pid) of an `identity`; pid None when the text is not one cidrx wrote."""
    host, _, rest = holder.partition("/pid ")
    pid, _, _ = rest.partition("/")
    return host, int(pid) if pid.isdigit() else None


def holder_gone(holder: str) -> str | None:
    """Why the run named by `holder` (an `identity`) has certainly ended, when it ran on this host: its pid
    is gone, or now belongs to another process (its start differs). None when it may still be running, or
    ran elsewhere, or the text is not one cidrx wrote: never take over on an assumption."""
    host, pid = holder_process(holder)
    if host != socket.gethostname() or pid is None:
        return None
    recorded = holder.partition(_START)[2].partition("/")[0] or None
    if recorded is not None and BOOT_ID.exists():
        now = process_start(pid)
        if now is None:
            return "whose process is gone from this host"
        if now != recorded:
            return f"whose process is gone from this host (pid {pid} now belongs to another process)"
        return None
    if pid != os.getpid() and not process_alive(pid):
        return "whose process is gone from this host"
    return None


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (one of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True  # unknown: never take over on an assumption
    return True


def _micro_time(t: datetime) -> str:
    """A Kubernetes MicroTime (RFC 3339 with microseconds, UTC)."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(text: Any) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, since when, and where the lock is (for the refusal)."""

    identity: str
    since: str
    where: str

    def describe(self) -> str:
        since = f" since {self.since}" if self.since else ""
        return f"{self.identity or 'another run'}{since} ({self.where})"


class LeaseClient(Protocol):
    """The Lease calls the lock needs (cidrx.kube.leases.KubeLeases implements them over the Kubernetes API)."""

    def get(self, namespace: str, name: str) -> JSON | None: ...

    def create(self, namespace: str, body: JSON) -> JSON | None:
        """The created Lease; None when the name is taken."""
        ...

    def replace(self, body: JSON) -> JSON | None:
        """The replaced Lease; None when its resourceVersion is stale (someone wrote it since it was read)."""
        ...

    def delete(self, namespace: str, name: str, resource_version: str) -> None: ...


class FileLock:
    """`flock` on PLAN.json.lock; the file keeps {"holder", "since"} of the current holder for the refusal.

    The file exists only while a run holds it: the holder removes it before unlocking, and a run that locked
    a file which was removed (or replaced) meanwhile drops it and tries again on the new one, so two runs can
    never each hold a lock on a different inode of the same path. A run killed outright leaves an unlocked
    file, which the next run takes and removes.
    """

    def __init__(self, plan_path: str | Path, me: str) -> None:
        self.path = lock_path(plan_path)
        self.me = me
        self.taken_over: Holder | None = None  # the holder named in a file left by a run that was killed
        self._fd: int | None = None

    def try_acquire(self) -> Holder | None:
        """None when acquired, else who holds it."""
        files.check_writable(self.path)
        for _ in range(100):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise InvalidInput(f"cannot open lock file {self.path}: {exc.strerror or exc}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._read(fd)
                os.close(fd)
                return holder
            if not self._still_named(fd):
                os.close(fd)  # its holder removed it between our open and our flock: lock the new one
                continue
            left = self._read(fd)  # a file that names a holder was left by a run that ended without removing it
            self.taken_over = left if left.identity and left.identity != self.me else None
            since = _micro_time(datetime.now(UTC))
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps({"holder": self.me, "since": since}).encode() + b"\n", 0)
            os.fsync(fd)
            self._fd = fd
            return None
        raise ApplyInterrupted(f"lock file {self.path} kept being replaced; run the same command again")

    def _still_named(self, fd: int) -> bool:
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)

    def _read(self, fd: int) -> Holder:
        try:
            data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        return Holder(str(data.get("holder") or ""), str(data.get("since") or ""), f"file lock {self.path}")

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Removed while still locked (see the class doc): a run waiting on this inode then sees it unnamed.
        if self._still_named(fd):
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class LeaseLock:
    """The plan's Lease in the target cluster (see the module doc)."""

    def __init__(
        self,
        client: LeaseClient,
        plan: Plan,
        me: str,
        *,
        namespace: str = LEASE_NAMESPACE,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.name = lease_name(plan)
        self.namespace = namespace
        self.me = me
        self.now = now
        self.taken_over: Holder | None = None
        self.taken_over_why = ""
        self.lost: str | None = None
        self._held = False

    @property
    def where(self) -> str:
        return f"Lease {self.namespace}/{self.name}"

    def _holder(self, lease: JSON) -> Holder:
        spec = lease.get("spec") or {}
        return Holder(str(spec.get("holderIdentity") or ""), str(spec.get("acquireTime") or ""), self.where)

    def _expired(self, lease: JSON) -> bool:
        spec = lease.get("spec") or {}
        renewed = _parse_time(spec.get("renewTime")) or _parse_time(spec.get("acquireTime"))
        seconds = spec.get("leaseDurationSeconds")
        if not spec.get("holderIdentity"):
            return True  # released
        if renewed is None or not isinstance(seconds, int):
            return False  # unreadable: never take over on an assumption
        return renewed + timedelta(seconds=seconds) < self.now()

    def _orphaned(self, lease: JSON) -> str | None:
        """Why the Lease is held by a run on this host whose process is gone (it ended without releasing the
        Lease: killed, or the cluster failed its final delete): no need to wait out the lease duration."""
        return holder_gone(str((lease.get("spec") or {}).get("holderIdentity") or ""))

    def _spec(self) -> JSON:
        t = _micro_time(self.now())
        return {"holderIdentity": self.me, "leaseDurationSeconds": LEASE_SECONDS, "acquireTime": t, "renewTime": t}

    def try_acquire(self) -> Holder | None:
        """None when acquired (created, or taken over when expired or orphaned), else who holds it.

        A write the cluster failed (5xx, a broken connection: RetriesExhausted from the client) may or may not
        have happened, so it is never repeated blindly: the Lease is read again and the decision made anew.
        """
        failed: RetriesExhausted | None = None
        for attempt in range(1, ATTEMPTS + 1):
            if failed is not None:
                retry.sleep(retry.default_policy().backoff(attempt - 1))
            lease = self.client.get(self.namespace, self.name)
            try:
                if lease is None:
                    body = {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {
                            "name": self.name,
                            "namespace": self.namespace,
                            "labels": {"app.kubernetes.io/managed-by": "cidrx"},
                        },
                        "spec": self._spec(),
                    }
                    if self.client.create(self.namespace, body) is not None:
                        self._held = True
                        return None
                    continue  # created meanwhile by another run: read it
                holder = self._holder(lease)
                if holder.identity and holder.identity != self.me:
                    orphaned = self._orphaned(lease)
                    if orphaned:
                        self.taken_over, self.taken_over_why = holder, orphaned
                    elif self._expired(lease):
                        self.taken_over, self.taken_over_why = holder, "whose run stopped renewing it"
                    else:
                        return holder
                lease = {**lease, "spec": {**(lease.get("spec") or {}), **self._spec()}}
                if self.client.replace(lease) is not None:  # guarded by the resourceVersion just read
                    self._held = True
                    return None
            except RetriesExhausted as exc:
                failed = exc
        if failed is not None:
            raise RetriesExhausted(
                f"could not take {self.where}: {failed.message} (tried {ATTEMPTS} times, re-reading it each time)",
                hint=retry.RETRY_LATER_HINT,
            )
        raise ApplyInterrupted(f"{self.where} kept changing while cidrx tried to take it; run the same command again")

    def renew(self) -> None:
        """Move renewTime to now (called by the renewal thread). Records in `lost` when another run took it."""
        for _ in range(3):
            lease = self.client.get(self.namespace, self.name)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.me:
                holder = self._holder(lease) if lease is not None else None
                self.lost = f"{self.where} is now held by {holder.describe()}" if holder else f"{self.where} is gone"
                self._held = False
                return
            spec = {**(lease.get("spec") or {}), "renewTime": _micro_time(self.now())}
            if self.client.replace({**lease, "spec": spec}) is not None:
                return

    def release(self) -> None:
        """Delete the Lease if it is still ours. A failing cluster is retried (re-reading, as in try_acquire);
        the last failure is raised for the caller to report: the Lease then expires by itself, and the next run
        on this host takes it over at once."""
        if not self._held:
            return
        self._held = False
        failed: RetriesExhausted | None = None
        for attempt in range(1, ATTEMPTS + 1):
            if failed is not None:
                retry.sleep(retry.default_policy().backoff(attempt - 1))
            try:
                lease = self.client.get(self.namespace, self.name)
                if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.me:
                    return
                rv = str((lease.get("metadata") or {}).get("resourceVersion") or "")
                self.client.delete(self.namespace, self.name, rv)
                return
            except RetriesExhausted as exc:
                failed = exc
        if failed is not None:
            raise failed


class _Renewer:
    """Renews the Lease every third of its duration until stopped (a daemon thread: a dying process leaves
    the Lease to expire)."""

    def __init__(self, lease: LeaseLock, note: Callable[[str], None]) -> None:
        self.lease = lease
        self.note = note
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="cidrx-lease-renewal", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(LEASE_SECONDS / 3):
            try:
                self.lease.renew()
            except Exception as exc:  # keep renewing: one failed request must not end the lock early
                self.note(f"could not renew {self.lease.where}: {exc}")
                continue
            if self.lease.lost:
                self.note(f"warning: lost the plan's lock: {self.lease.lost}")
                return


def _refusal(plan: Plan, holder: Holder, waited: float | None) -> LockHeld:
    after = f" after waiting {waited:.0f}s" if waited else ""
    return LockHeld(
        f"another run holds the lock of plan {plan.plan_id}{after}: {holder.describe()}; nothing was done",
        hint="wait for it to finish and run the same command again, or pass --wait-for-lock SECONDS",
    )


@contextlib.contextmanager
def plan_lock(
    plan: Plan,
    plan_path: str | Path,
    *,
    leases: LeaseClient | None,
    wait: float | None,
    waiter: Waiter,
    note: Callable[[str], None],
    report: Callable[[str, float], None] | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Iterator[None]:
    """Hold the plan's file lock (always) and its Lease (when `leases` is given) for the `with` body.

    `wait`: None or 0 refuses at once when either is held; otherwise poll (backing off) for that many seconds.
    """
    me = identity(plan)
    file_lock = FileLock(plan_path, me)
    lease = LeaseLock(leases, plan, me, now=now) if leases is not None else None
    blocker: list[Holder] = []

    def attempt() -> bool | None:
        holder = file_lock.try_acquire()
        if holder is None and lease is not None:
            try:
                holder = lease.try_acquire()
            except BaseException:  # e.g. forbidden to read Leases: the file lock must not outlive the refusal
                file_lock.release()
                raise
            if holder is not None:
                file_lock.release()
        if holder is None:
            return True
        blocker[:] = [holder]
        return None

    if attempt() is None:
        if not wait:
            raise _refusal(plan, blocker[0], None)
        note(f"waiting up to {wait:.0f}s for the lock of plan {plan.plan_id}, held by {blocker[0].describe()}")
        try:
            waiter.wait_until(
                f"the lock of plan {plan.plan_id}",
                attempt,
                timeout=wait,
                interval=1.0,
                max_interval=10.0,
                report=report,
            )
        except ApplyInterrupted:
            raise _refusal(plan, blocker[0], wait) from None
    renewer: _Renewer | None = None
    try:
        if file_lock.taken_over is not None:
            note(
                f"took over {file_lock.taken_over.describe()}, whose run ended without releasing it; "
                "resuming from the journal and the plan's tags"
            )
        if lease is not None:
            if lease.taken_over is not None:
                note(
                    f"took over {lease.where} from {lease.taken_over.describe()}, {lease.taken_over_why}; "
                    "resuming from the journal and the plan's tags"
                )
            renewer = _Renewer(lease, note)
            renewer.thread.start()
        yield
    finally:
        if renewer is not None:
            renewer.stop.set()
            renewer.thread.join(timeout=5)
        try:
            if lease is not None:
                lease.release()
        except CidrxError as exc:  # the run's own outcome stands; the Lease expires or is taken over
            note(
                f"warning: could not release {lease.where if lease else 'the lock'}: {exc.message}; it expires "
                f"within {LEASE_SECONDS}s, and a run on this host takes it over at once"
            )
        finally:
            file_lock.release()
