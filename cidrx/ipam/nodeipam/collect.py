"""Kubernetes node IPAM, collection: where kube-controller-manager's node podCIDR settings are read from.

Why it exists: with `kube-controller-manager --allocate-node-cidrs`, every Node takes one fixed-size block
(`--node-cidr-mask-size`, default /24 for IPv4) of `--cluster-cidr`. The analysis needs those settings to
say how many nodes still fit. `node_ipam_config_from` is pure (the controller-manager static pod's flags,
else kubeadm's ClusterConfiguration); `collect_node_ipam` does the two reads through KubeApi.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cidrx.ipam.nodeipam.model import NodeIpamConfig

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi

JSON = Mapping[str, Any]
IpNet = ipaddress.IPv4Network | ipaddress.IPv6Network

NAMESPACE = "kube-system"
CONTROLLER_MANAGER = "kube-controller-manager"
COMPONENT_LABEL = "component"  # kubeadm's static pods carry component=<name>
KUBEADM_CONFIG = "kubeadm-config"
DEFAULT_NODE_MASK_V4 = 24  # kube-controller-manager --node-cidr-mask-size(-ipv4) default


# ---- configuration ---------------------------------------------------------------------------------


def _get(obj: Any, *path: str) -> Any:
    cur = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def _is_controller_manager(pod: JSON) -> bool:
    labels = _get(pod, "metadata", "labels") or {}
    name = str(_get(pod, "metadata", "name") or "")
    return labels.get(COMPONENT_LABEL) == CONTROLLER_MANAGER or name.startswith(CONTROLLER_MANAGER + "-")


def _tokens(container: JSON) -> list[str]:
    """command + args as argv; a shell-wrapped command ("/bin/sh -c 'kube-controller-manager --a=b'")
    is split too, since some installers start the binary that way."""
    out: list[str] = []
    for part in [*(container.get("command") or []), *(container.get("args") or [])]:
        text = str(part)
        if any(c.isspace() for c in text.strip()):
            try:
                out += shlex.split(text)
            except ValueError:
                out += text.split()
        else:
            out.append(text)
    return out


_VALUE_FLAGS = frozenset(
    {"cluster-cidr", "node-cidr-mask-size", "node-cidr-mask-size-ipv4", "node-cidr-mask-size-ipv6"}
)
_BOOL_FLAGS = frozenset({"allocate-node-cidrs"})


def parse_flags(argv: Sequence[str]) -> dict[str, str]:
    """The node-IPAM flags in `argv`: `--flag=value` and `--flag value` (pflag accepts both for value
    flags; a bare boolean flag means true and never takes the next word). Later occurrences win."""
    flags: dict[str, str] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if not word.startswith("--"):
            continue
        name, eq, value = word[2:].partition("=")
        if name in _BOOL_FLAGS:
            flags[name] = value if eq else "true"
        elif name in _VALUE_FLAGS:
            if eq:
                flags[name] = value
            elif i < len(argv) and not argv[i].startswith("--"):
                flags[name] = argv[i]
                i += 1
    return flags


def networks(text: str) -> list[IpNet]:
    """ "10.244.0.0/16,fd00::/48" as networks, invalid entries dropped (host bits are cleared)."""
    nets: list[IpNet] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            nets.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            continue
    return nets


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "t", "yes")


def _config(flags: Mapping[str, str], source: str, *, allocate_default: bool) -> NodeIpamConfig:
    nets = networks(flags.get("cluster-cidr", ""))
    has_v4 = any(n.version == 4 for n in nets)
    # Dual-stack clusters take --node-cidr-mask-size-ipv4; single-stack ones --node-cidr-mask-size.
    mask = _int(flags.get("node-cidr-mask-size-ipv4")) or _int(flags.get("node-cidr-mask-size"))
    allocate = _truthy(flags["allocate-node-cidrs"]) if "allocate-node-cidrs" in flags else allocate_default
    return NodeIpamConfig(
        cluster_cidrs=tuple(str(n) for n in nets),
        node_mask_v4=(mask or DEFAULT_NODE_MASK_V4) if has_v4 else None,
        source=source,
        allocate_node_cidrs=allocate,
    )


def _from_pods(pods: Iterable[JSON]) -> NodeIpamConfig | None:
    found: list[tuple[str, dict[str, str]]] = []
    for pod in pods:
        if not _is_controller_manager(pod):
            continue
        for container in _get(pod, "spec", "containers") or []:
            if not isinstance(container, Mapping):
                continue
            argv = _tokens(container)
            if not any(CONTROLLER_MANAGER in w for w in argv[:3]) and container.get("name") != CONTROLLER_MANAGER:
                continue
            name = f"{_get(pod, 'metadata', 'namespace') or NAMESPACE}/{_get(pod, 'metadata', 'name') or ''}"
            found.append((name, parse_flags(argv)))
    if not found:
        return None
    # Several control-plane nodes run one each; prefer one that names a cluster CIDR, then by name.
    found.sort(key=lambda item: ("cluster-cidr" not in item[1], item[0]))
    name, flags = found[0]
    # --allocate-node-cidrs defaults to false in kube-controller-manager.
    return _config(flags, f"pod {name}", allocate_default=False)


def _extra_args(controller_manager: Any) -> dict[str, str]:
    """kubeadm's controllerManager.extraArgs: a map (v1beta3) or a list of {name, value} (v1beta4)."""
    raw = _get(controller_manager, "extraArgs")
    if isinstance(raw, Mapping):
        return {str(k): str(v) for k, v in raw.items()}
    if isinstance(raw, list):
        return {str(a.get("name")): str(a.get("value", "")) for a in raw if isinstance(a, Mapping) and a.get("name")}
    return {}


def _from_configmaps(configmaps: Iterable[JSON]) -> NodeIpamConfig | None:
    import yaml

    for cm in configmaps:
        if _get(cm, "metadata", "name") != KUBEADM_CONFIG:
            continue
        text = _get(cm, "data", "ClusterConfiguration")
        if not isinstance(text, str):
            continue
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        extra = _extra_args(_get(doc, "controllerManager"))
        flags = {k: v for k, v in extra.items() if k in _VALUE_FLAGS | _BOOL_FLAGS}
        subnet = _get(doc, "networking", "podSubnet")
        if subnet and "cluster-cidr" not in flags:
            flags["cluster-cidr"] = str(subnet)
        if "cluster-cidr" not in flags:
            continue
        # kubeadm turns on --allocate-node-cidrs whenever networking.podSubnet is set.
        return _config(flags, f"configmap {NAMESPACE}/{KUBEADM_CONFIG}", allocate_default=True)
    return None


def node_ipam_config_from(pods: Iterable[JSON], configmaps: Iterable[JSON]) -> NodeIpamConfig | None:
    """The node IPAM settings from the kube-controller-manager static pod's flags, else from kubeadm's
    ClusterConfiguration; None when neither is visible (managed control planes hide both).

    `configmaps` is only iterated when the pods tell nothing, so it may be a lazy reader."""
    from_pod = _from_pods(pods)
    if from_pod is not None and from_pod.cluster_cidrs:
        return from_pod
    return _from_configmaps(configmaps) or from_pod


# ---- collection ------------------------------------------------------------------------------------


def collect_node_ipam(api: KubeApi) -> NodeIpamConfig | None:
    """Read the settings through `api`: one list of pods in kube-system, and only when that
    tells nothing, one read of the kubeadm-config ConfigMap.

    Not being allowed to read either is not an error: the settings only add the capacity figure, and
    managed control planes never show them. An unreachable cluster (KubeUnavailable) still propagates.
    """
    from cidrx.errors import AccessDenied
    from cidrx.kube.errors import KubeUnavailable

    def readable(read: Callable[[], Iterable[JSON]]) -> list[JSON]:
        try:
            return list(read())
        except KubeUnavailable:
            raise
        except AccessDenied:
            return []

    # KubeApi has no label-selected list yet; kube-system holds few pods, so filter them here.
    pods = readable(lambda: api.iter_custom("", "v1", "pods", namespace=NAMESPACE))

    def kubeadm_config() -> Iterator[JSON]:
        yield from readable(
            lambda: [cm] if (cm := api.get_custom("", "v1", "configmaps", KUBEADM_CONFIG, NAMESPACE)) else []
        )

    return node_ipam_config_from(pods, kubeadm_config())


def collect_served(api: KubeApi, groups: set[str]) -> NodeIpamConfig | None:
    """Node IPAM is part of Kubernetes itself (no API group to look for): always read."""
    return collect_node_ipam(api)


def pod_refs(section: NodeIpamConfig) -> set[str]:
    return set()


def cidrs(section: NodeIpamConfig) -> list[str]:
    """Node IPAM's ranges are the nodes' podCIDRs, which the collector keeps with the nodes anyway."""
    return []
