"""The live EKS estate, assembled in one place: moto in process, the incident cluster in the fake API server.

Many tests drive cidrx against the same thing: an EKS world (the incident of eks_world.py, or another
builder's) in moto, its cluster in the fake Kubernetes API server (eks_cluster.py), optionally vpc-cni as an
EKS managed add-on (fakes/eks_addons.py), and botocore event handlers that watch or disturb the calls. They
differ only in those options, so they all take them here; the `eks_estate` fixture (conftest_eks.py) binds
a test's tmp_path and monkeypatch.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.estates.eks import REGION, World, build_incident, fake_aws_env
from tests.support.estates.eks_cluster import DaemonSetController, Hooks, incident_server
from tests.support.fakes.ec2_ipam import FakeIpam, is_moto_stub
from tests.support.fakes.eks_addons import BuiltinHandlers, FakeEksAddons
from tests.support.fakes.kube_server import FakeKubeServer

CLUSTER = "demo"
# vpc-cni add-on configuration values a user had set before cidrx came: a plan must keep them.
ADDON_BEFORE: dict[str, Any] = {"env": {"WARM_IP_TARGET": "5"}, "init": {"env": {"DISABLE_TCP_EARLY_DEMUX": "true"}}}


@dataclass
class EksEstate:
    session: Any  # boto3.Session of REGION inside mock_aws
    world: World
    kube: FakeKubeServer
    hooks: Hooks
    controller: DaemonSetController
    kubeconfig: str
    cluster: str
    addons: FakeEksAddons | None = None

    @property
    def ec2(self) -> Any:
        return self.session.client("ec2")

    @property
    def eks(self) -> Any:
        return self.session.client("eks")

    @property
    def target(self) -> list[str]:
        """The CLI options that point cidrx at this estate."""
        return ["--eks", "--region", REGION, "--cluster", self.cluster, "--kubeconfig", self.kubeconfig]


def clean_env(mp: pytest.MonkeyPatch, **aws: str) -> None:
    """The fake AWS environment (eks_world.fake_aws_env), and no CIDRX_* or KUBECONFIG from the caller's."""
    fake_aws_env(mp, **aws)
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            mp.delenv(name)


def _vpc_tags(session: Any, vpc_id: str) -> dict[str, str]:
    (vpc,) = session.client("ec2").describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
    return {t["Key"]: t["Value"] for t in vpc.get("Tags") or ()}


# A botocore BUILTIN_HANDLERS entry: (event name, handler, *optional position).
HandlerSpec = tuple[Any, ...]


@contextlib.contextmanager
def eks_estate(
    tmp: Path,
    mp: pytest.MonkeyPatch,
    *,
    builder: Callable[..., World] = build_incident,
    cluster: str = CLUSTER,
    handlers: Sequence[HandlerSpec] = (),
    addon: bool = False,
    addon_config: dict[str, Any] | None = None,
    seed: int | None = None,
    wrap_moto: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None,
    ipam: FakeIpam | None = None,
    kube_setup: Callable[[FakeKubeServer, Hooks, World], None] | None = None,
) -> Iterator[EksEstate]:
    """The world `builder` makes in moto, and its cluster in a started fake API server.

    handlers: botocore handler specs added to BUILTIN_HANDLERS while the estate lives.
    addon: vpc-cni is an EKS managed add-on (with `addon_config` as its configuration values, if given).
    seed: moto's id generator is seeded, so every world built with the same seed has the same ids.
    wrap_moto: replaces moto's botocore stub by wrap_moto(stub), for injectors that must answer *instead of*
    moto (botocore calls every before-send handler and uses the first answer).
    ipam: the VPC IPAM the account has (fakes/ec2_ipam.py, in front of moto's stub: moto has none); by default
    an account without pools.
    kube_setup: turns the incident's cluster into the builder's (e.g. Karpenter's nodes and node classes).
    """
    import boto3
    import botocore.handlers
    from moto import mock_aws
    from moto.core.models import botocore_stubber
    from moto.moto_api._internal import mock_random

    clean_env(mp)
    specs = list(botocore.handlers.BUILTIN_HANDLERS)
    ipam = ipam if ipam is not None else FakeIpam()
    wrapped = ipam.wrap(botocore_stubber)
    if wrap_moto is not None:
        wrapped = wrap_moto(wrapped)
    specs = [(s[0], wrapped, *s[2:]) if is_moto_stub(s[1]) else s for s in specs]
    assert any(s[1] is wrapped for s in specs)
    specs += handlers
    addons = FakeEksAddons(region=REGION) if addon else None
    if addons is not None:
        builtin = BuiltinHandlers()
        addons.install(builtin)
        specs += builtin.specs
    try:
        with pytest.MonkeyPatch.context() as handlers_mp:
            handlers_mp.setattr(botocore.handlers, "BUILTIN_HANDLERS", specs)
            with mock_aws():
                session = boto3.Session(region_name=REGION)
                if seed is not None:
                    # moto sets up a region's backends (the EC2 one makes a default VPC) on first use, or when
                    # a new mock resets one an earlier estate used (cidrx's collector reads Auto Scaling), drawing
                    # ids from the same generator: set them up before seeding, so every world starts alike.
                    session.client("ec2").describe_vpcs()
                    session.client("autoscaling").describe_auto_scaling_groups()
                    mock_random.seed(seed)
                ipam.tags_of = lambda vpc_id: _vpc_tags(session, vpc_id)
                world = builder(session.client("ec2"), session.client("eks"), region=REGION, cluster=cluster)
                if addons is not None:
                    if addon_config is None:
                        addons.put_addon(cluster)
                    else:
                        addons.put_addon(cluster, configuration_values=json.dumps(addon_config))
                kube, hooks, controller = incident_server(world)
                if kube_setup is not None:
                    kube_setup(kube, hooks, world)
                try:
                    kubeconfig = str(kube.kubeconfig(tmp / f"kubeconfig-{id(kube)}"))
                    yield EksEstate(session, world, kube, hooks, controller, kubeconfig, cluster, addons)
                finally:
                    kube.stop()
                if kube.errors:
                    raise kube.errors[0]
    finally:
        if seed is not None:
            mock_random.seed()  # back to unpredictable ids for whatever runs next
