"""Address maps of the in-cluster IPAM pools (pure, from the snapshot's kube section), for the HTML map.

Why it exists: the HTML report draws every IPAM's pools beside the provider's networks without naming an
IPAM: each package declares its map builder (`maps`, taking its section of the kube section and the kube
section itself), and this module asks every registered IPAM in turn.
"""

from __future__ import annotations

from cidrx import registry
from cidrx.model.kube import KubeSection
from cidrx.model.netmap import NetworkMap


def address_maps(kube: KubeSection) -> tuple[NetworkMap, ...]:
    """The maps of every IPAM that declares some, IPAMs by name (the order the report has always drawn them in),
    each IPAM's in its own order."""
    out: list[NetworkMap] = []
    for spec in sorted(registry.ipams(), key=lambda s: s.name):
        if spec.maps:
            out += registry.load(spec.maps)(getattr(kube, spec.field), kube)
    return tuple(out)
