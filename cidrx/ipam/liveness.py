"""One definition of a live address, shared by every in-cluster IPAM that cidrx may release addresses of.

Why it exists: releasing an address that a running workload still holds gives two pods the same IP. The
IPAMs' records name a pod, but the name can be stale or wrong in ways cidrx cannot see (a KubeVirt VM
migrates to another pod, Whereabouts names a reservation after its network, a pod is still Pending and
its annotation is not written yet). So liveness is decided by the address itself: an address is live when
any pod that has not finished (phase other than Succeeded/Failed) reports it in `status.podIPs` or in its
Multus network-status annotation. IPAM-specific reasons (a Calico tunnel or LoadBalancer address, an
allocation naming an existing pod) are added by each IPAM on top of this one.

Pure: built from the PodState records of a snapshot (which keeps every unfinished pod that reports an
address inside an IPAM-managed range, plus every pod an IPAM record names).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from cidrx.model.kube import PodState

# Kubernetes pod phases after which the pod's sandbox (and so its address) is gone for good.
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})


def canonical_ip(text: str) -> str:
    """The address in one spelling (IPv6 compressed, lower case), or the text unchanged when it is none."""
    if ":" not in text:
        # ipaddress accepts IPv4 only as canonical dotted quads (no leading zeros), so its spelling of a
        # valid one is the text itself; skipping the parse matters for clusters with 60,000 pods.
        return text.strip()
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        return text


def is_unfinished(pod: PodState) -> bool:
    """True while the pod may hold its address: every phase but Succeeded/Failed (Pending included)."""
    return pod.phase not in FINISHED_PHASES


class PodsByKey(Mapping[str, PodState]):
    """The snapshot's pods by "namespace/name" (what IPAM records name), without a "namespace/name" string per
    pod: indexed by the name each pod already holds (several pods of one name, in different namespaces, are
    kept in a tuple), so a 60,000-pod index costs its table only (docs/performance.md)."""

    def __init__(self, pods: Sequence[PodState]) -> None:
        by_name: dict[str, PodState | tuple[PodState, ...]] = {}
        for pod in pods:
            held = by_name.get(pod.name)
            by_name[pod.name] = pod if held is None else (*(held if isinstance(held, tuple) else (held,)), pod)
        self._by_name = by_name
        self._pods = pods

    def __getitem__(self, key: str) -> PodState:
        at = key.find("/")
        while at >= 0:  # a key has one "/"; any other split is tried too, as a dict of keys would match it
            held = self._by_name.get(key[at + 1 :])
            if held is not None:
                namespace = key[:at]
                for pod in held if isinstance(held, tuple) else (held,):
                    if pod.namespace == namespace:
                        return pod
            at = key.find("/", at + 1)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (pod.key for pod in self._pods)

    def __len__(self) -> int:
        return len(self._pods)

    def values(self) -> Sequence[PodState]:  # type: ignore[override]  # the pods themselves, in their order
        return self._pods


def _key(pod: PodState) -> str:
    return pod.key


@dataclass(frozen=True)
class AddressHolders:
    """Which unfinished pods report each address (canonical spelling -> its one pod, or its pods sorted by
    namespace/name: an address almost always has one, and 60,000 one-pod tuples would cost 3 MB)."""

    by_ip: Mapping[str, PodState | tuple[PodState, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, pods: Iterable[PodState]) -> AddressHolders:
        found: dict[str, PodState | tuple[PodState, ...]] = {}
        shared: list[str] = []
        for pod in pods:
            if not is_unfinished(pod):
                continue
            for ip in pod.ips:
                key = canonical_ip(ip)
                held = found.get(key)
                if held is None:
                    found[key] = pod
                    continue
                if not isinstance(held, tuple):
                    shared.append(key)
                    held = (held,)
                found[key] = (*held, pod)
        for key in shared:
            found[key] = tuple(sorted(found[key], key=_key))  # type: ignore[arg-type]
        return cls(found)

    def holders(self, ip: str) -> tuple[PodState, ...]:
        """The unfinished pods that report `ip` (any spelling), possibly none."""
        held = self.by_ip.get(canonical_ip(ip), ())
        return held if isinstance(held, tuple) else (held,)

    def is_live(self, ip: str) -> bool:
        return bool(self.holders(ip))

    def describe(self, ip: str) -> str:
        """ "held by ns/a (Running), ns/b (Pending)" for evidence and refusals; "" when nobody holds it."""
        pods = self.holders(ip)
        if not pods:
            return ""
        return "held by " + ", ".join(f"{p.key} ({p.phase or 'phase unknown'})" for p in pods)
