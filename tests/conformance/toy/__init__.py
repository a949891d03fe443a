"""A toy IPAM as a plugin, the way a real one declares itself (`SPEC`, `STRATEGIES`): the conformance tests
register it with one `registry.register(...)` call and check that everything derived from the declarations
(CLI help, the ClusterRole, the HTML map, the findings docs) picks it up with no other line naming it."""

from __future__ import annotations

from cidrx.registry import IpamSpec, Strategy

SPEC = IpamSpec(
    name="toyipam",
    title="Toy IPAM",
    api_groups=("toy.cidrx.test",),
    finding_prefix="TOY-",
    collect="tests.conformance.toy.collect",
    field="toy",
    section="tests.conformance.toy.model:ToySection",
    kube_reads=("kubernetes: toypools.toy.cidrx.test list",),
    maps="tests.conformance.toy.netmap:address_maps",
)

STRATEGIES = (
    Strategy(
        "toy-pool",
        "toyipam",
        "a new toy pool",
        "tests.conformance.toy.strategy:ACTIONS",
        plan="tests.conformance.toy.strategy:make_plan",
        drift="tests.conformance.toy.strategy:check_drift",
        options=frozenset({"cidr"}),
    ),
)
