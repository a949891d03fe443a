"""Whether pods in a new GKE pod range keep their addresses when they talk to other pods: ip-masq-agent's
`nonMasqueradeCIDRs` and Dataplane V2's EgressNATPolicy.

Why: ip-masq-agent SNATs to the node's address all traffic whose destination is not in its
`nonMasqueradeCIDRs` (kubernetes-sigs/ip-masq-agent cmd/ip-masq-agent/ip-masq-agent.go at
4e04115f860008bb50b1889c0b20164877049b14: the ConfigMap's `config` key is mounted as
/etc/config/ip-masq-agent, YAML or JSON; without it the defaults are the RFC 1918 ranges, plus the other
reserved ranges with --nomasq-all-reserved-ranges; at most 64 CIDRs, each aligned). A cluster whose
ConfigMap lists only today's pod range would SNAT traffic to pods in the new range, which breaks
NetworkPolicy and source-based rules. Dataplane V2 clusters (networkConfig.datapathProvider
ADVANCED_DATAPATH) and Autopilot express the same with EgressNATPolicy (networking.gke.io/v1,
spec.action NoSNAT, spec.destinations[].cidr; GKE creates one named `default`).

cidrx plans the ConfigMap change (a JSON patch guarded by the resourceVersion it read) and says exactly
what to run for an EgressNATPolicy, which GKE manages. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network, ip_network
from typing import Any

import yaml

from cidrx.model.kube import ConfigMapData, KubeSection
from cidrx.providers.gke.model import GkeSection

IP_MASQ_AGENT = ("kube-system", "ip-masq-agent")
CONFIG_KEY = "config"
DEFAULT_NON_MASQUERADE = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
MAX_CIDRS = 64
ADVANCED_DATAPATH = "ADVANCED_DATAPATH"


def parse_config(text: str) -> dict[str, Any] | None:
    """The agent's configuration (YAML or JSON), or None when it is not a mapping."""
    try:
        loaded = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError:
        return None
    return loaded if isinstance(loaded, dict) else None


def _covers(cidrs: tuple[str, ...] | list[str], new: IPv4Network) -> bool:
    for text in cidrs:
        try:
            net = ip_network(str(text).strip(), strict=False)
        except ValueError:
            continue
        if isinstance(net, IPv4Network) and new.subnet_of(net):
            return True
    return False


@dataclass(frozen=True)
class MasqReview:
    config_map: ConfigMapData | None  # None: no ip-masq-agent ConfigMap in kube-system
    cidrs: tuple[str, ...]  # its nonMasqueradeCIDRs (the defaults when there is none)
    covered: bool  # the new range is in them already
    problem: str = ""  # why cidrx cannot plan the change ("" when it can)


def review_ip_masq(kube: KubeSection, new: IPv4Network) -> MasqReview | None:
    """None when the snapshot did not read the ConfigMap (no cluster access, or taken before cidrx did)."""
    if kube.config_maps is None:
        return None
    cm = kube.config_map(*IP_MASQ_AGENT)
    if cm is None:
        return MasqReview(None, DEFAULT_NON_MASQUERADE, _covers(DEFAULT_NON_MASQUERADE, new))
    config = parse_config(cm.data.get(CONFIG_KEY, ""))
    if config is None:
        return MasqReview(cm, (), False, f"its `{CONFIG_KEY}` key is not a YAML or JSON mapping")
    raw = config.get("nonMasqueradeCIDRs")
    # A config without the key keeps the agent's defaults ("Only overwrites fields provided").
    cidrs = tuple(str(c) for c in raw) if isinstance(raw, list) else DEFAULT_NON_MASQUERADE
    if _covers(cidrs, new):
        return MasqReview(cm, cidrs, True)
    if len(cidrs) >= MAX_CIDRS:
        return MasqReview(cm, cidrs, False, f"it lists {len(cidrs)} CIDRs, the agent's maximum ({MAX_CIDRS})")
    return MasqReview(cm, cidrs, False)


def updated_config(text: str, cidr: str, *, remove: bool = False) -> str:
    """The `config` value with `cidr` appended to nonMasqueradeCIDRs (the defaults written out when the key
    was absent), or with every entry equal to it taken out (`remove`, for rollback); other keys are kept
    (comments are not: the value is written back as YAML)."""
    config = parse_config(text) or {}
    raw = config.get("nonMasqueradeCIDRs")
    cidrs = [str(c) for c in raw] if isinstance(raw, list) else list(DEFAULT_NON_MASQUERADE)
    config["nonMasqueradeCIDRs"] = [c for c in cidrs if c != cidr] if remove else [*cidrs, cidr]
    out: str = yaml.safe_dump(config, default_flow_style=False, sort_keys=False)
    return out


def ip_masq_note(found: MasqReview | None, new: IPv4Network, planned: bool) -> str:
    ns, name = IP_MASQ_AGENT
    if found is None:
        return (
            f"ip-masq-agent: if {ns}/{name} sets nonMasqueradeCIDRs, add {new} there, or traffic from pods in the "
            "new range is SNATed to node addresses (this snapshot did not read the ConfigMap)."
        )
    if found.config_map is None:
        if found.covered:
            return (
                f"ip-masq-agent: no {ns}/{name} ConfigMap; the agent's defaults (RFC 1918) already leave {new} "
                "unmasqueraded."
            )
        return (
            f"ip-masq-agent: no {ns}/{name} ConfigMap, and {new} is outside the agent's RFC 1918 defaults: if the "
            f"agent runs without --nomasq-all-reserved-ranges, create the ConfigMap with nonMasqueradeCIDRs "
            f"{', '.join((*DEFAULT_NON_MASQUERADE, str(new)))} (key `{CONFIG_KEY}`)."
        )
    if found.covered:
        return f"ip-masq-agent: {ns}/{name} already leaves {new} unmasqueraded ({', '.join(found.cidrs)})."
    if planned:
        return f"ip-masq-agent: cidrx adds {new} to nonMasqueradeCIDRs of {ns}/{name} (step ip-masq-agent)."
    return (
        f"ip-masq-agent: add {new} to nonMasqueradeCIDRs of {ns}/{name} by hand (`kubectl -n {ns} edit configmap "
        f"{name}`): cidrx does not, because {found.problem}."
    )


def egress_nat_note(gke: GkeSection, kube: KubeSection, new: IPv4Network) -> str | None:
    """What to do about EgressNATPolicies, for Dataplane V2 and Autopilot clusters (None: nothing applies)."""
    c = gke.cluster
    if c.datapath_provider != ADVANCED_DATAPATH and not c.autopilot:
        return None
    if kube.egress_nat_policies is None:
        return (
            f"Dataplane V2: if an EgressNATPolicy (networking.gke.io/v1) lists NoSNAT destinations, add {new} to it "
            "(this snapshot did not read them)."
        )
    missing = [p for p in kube.egress_nat_policies if p.action == "NoSNAT" and not _covers(p.destinations, new)]
    if not missing:
        return None
    patch = f'[{{"op":"add","path":"/spec/destinations/-","value":{{"cidr":"{new}"}}}}]'
    return " ".join(
        f"Dataplane V2: EgressNATPolicy {p.name} does not list {new}, so traffic to pods in it is SNATed; run "
        f"`kubectl patch egressnatpolicy {p.name} --type=json -p '{patch}'` (GKE manages this object, so cidrx "
        "does not write it)."
        for p in missing
    )
