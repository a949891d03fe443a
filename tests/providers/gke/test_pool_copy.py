"""The new node pool of a GKE node-pool plan is a faithful copy of its template
(cidrx/providers/gke/facts/pool_copy.py).

Grounded three ways: the fields cidrx copies are compared with the container v1 discovery document that
google-api-python-client ships (a field Google adds shows up here as a failure, not as a pool that silently
loses it); the GPU template is shaped after real API dumps (tests/support/gke_world.gpu_pool_json cites
them); and the copy is created through the real client in the fake, which validates the request against
the same document. Plan cases are pure; the end-to-end case applies a plan against the fake.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cidrx.model.kube import KubeEvent, KubePod
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.collect.collect import (
    NODE_CONFIG_KEYS,
    NODE_CONFIG_NOT_COPIED,
    NODE_POOL_SETTING_KEYS,
    POD_RANGE_NETWORK_KEYS,
    node_pool_from,
)
from cidrx.providers.gke.facts.pool_copy import choose_template, starving_pools
from cidrx.providers.gke.provider import PROVIDER
from cidrx.render.terraform import render_terraform
from tests.support.cases import gke as cases
from tests.support.cli import run
from tests.support.estates.gke import (
    CLUSTER,
    GPU_POOL,
    GPU_SERVICE_ACCOUNT,
    LOCATION,
    PROJECT,
    add_gpu_pool,
    gpu_pool_json,
)
from tests.support.fakes.gcp_discovery import documents_dir
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.terraform_check import parse, resources

# The NodePool fields a copy sets itself (name, pod range, max pods) or takes from the template through
# the model's own fields (config, zones, autoscaling, management, initial size).
POOL_FIELDS_BY_MODEL = {
    "name",
    "networkConfig",
    "maxPodsConstraint",
    "config",
    "locations",
    "autoscaling",
    "management",
    "initialNodeCount",
}
# Left to GKE on purpose: the new pool gets the cluster's default node version (listed as a difference when
# it is not the template's), and autopilotConfig belongs to Autopilot, where cidrx never creates a pool.
POOL_FIELDS_NOT_COPIED = {"version", "autopilotConfig"}


@pytest.fixture(scope="module")
def container_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((documents_dir() / "container.v1.json").read_text())
    return doc


def _writable(schema: dict[str, Any]) -> set[str]:
    return {
        k
        for k, v in schema["properties"].items()
        if not v.get("readOnly") and not str(v.get("description", "")).startswith(("Output only", "[Output only]"))
    }


def test_every_writable_node_config_field_is_copied(container_doc: dict[str, Any]) -> None:
    props = container_doc["schemas"]["NodeConfig"]["properties"]
    assert set(NODE_CONFIG_KEYS) == _writable(container_doc["schemas"]["NodeConfig"]) - {"resourceLabels"}
    assert set(NODE_CONFIG_KEYS) | set(NODE_CONFIG_NOT_COPIED) == set(props)


def test_every_writable_node_pool_field_is_copied_or_accounted_for(container_doc: dict[str, Any]) -> None:
    writable = _writable(container_doc["schemas"]["NodePool"])
    assert writable == set(NODE_POOL_SETTING_KEYS) | POOL_FIELDS_BY_MODEL | POOL_FIELDS_NOT_COPIED
    network = set(container_doc["schemas"]["NodeNetworkConfig"]["properties"])
    assert set(POD_RANGE_NETWORK_KEYS) <= network


# --- plan cases ----------------------------------------------------------------------------------------


def gpu_snapshot(**kube_changes: Any) -> Snapshot:
    snap = cases.with_pools(cases.incident(), cases.default_pool(), node_pool_from(gpu_pool_json(), 110))
    return cases.with_kube(snap, **kube_changes) if kube_changes else snap


def plan_of(snap: Snapshot, created_at: str = "", **opts: Any) -> Plan:
    """A plan as `expand --plan` makes it (node-pool unless `strategy` says otherwise)."""
    return PROVIDER.make_plan(snap, PlanOptions(**{"strategy": "node-pool", **opts}), created_at)


def create_step_params(plan: Plan) -> dict[str, Any]:
    step = next(s for s in plan.steps if s.id == "create-node-pool")
    return step.params


def test_the_copy_keeps_the_whole_node_config_and_pool_settings() -> None:
    template = gpu_pool_json()
    plan = plan_of(gpu_snapshot(), template=GPU_POOL)
    params = create_step_params(plan)
    pool = params["node_pool"]
    want_config = {k: v for k, v in template["config"].items() if k != "windowsNodeConfig"}  # {} means unset
    assert pool["config"] == want_config
    assert pool["config"]["accelerators"] == [
        {
            "acceleratorCount": "2",
            "acceleratorType": "nvidia-tesla-v100",
            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
        }
    ]
    assert pool["upgradeSettings"] == {"maxSurge": 1, "strategy": "SURGE"}
    assert pool["placementPolicy"] == {"type": "COMPACT"}
    assert pool["networkConfig"] == {"podRange": plan.basis["range_name"], "enablePrivateNodes": True}
    assert pool["locations"] == template["locations"]
    assert pool["autoscaling"] == template["autoscaling"]
    assert pool["management"] == template["management"]
    assert pool["maxPodsConstraint"] == {"maxPodsPerNode": 32}
    assert pool["initialNodeCount"] == 1
    # Everything a REST NodePool carries, except what the copy changes, is the template's.
    same = set(template) - {"name", "networkConfig", "maxPodsConstraint", "version"}
    assert {k: pool[k] for k in same if k != "config"} == {k: template[k] for k in same if k != "config"}


def test_the_plan_lists_every_difference() -> None:
    plan = plan_of(gpu_snapshot(), template=GPU_POOL)
    params = create_step_params(plan)
    new_range = plan.basis["range_name"]
    assert params["differences"] == [
        f"name: gpu-pool-pods2 (template {GPU_POOL})",
        f"pod range: {new_range} (template pods)",
        "resource label cidrx-plan=<plan id> added (how cidrx finds its own pool again)",
    ]
    step = next(s for s in plan.steps if s.id == "create-node-pool")
    assert "2 x nvidia-tesla-v100" in step.description
    assert "differs only in: name: gpu-pool-pods2" in step.description


def test_max_pods_version_and_unknown_fields_are_listed_as_differences() -> None:
    raw = gpu_pool_json()
    raw["version"] = "1.26.5-gke.1200"
    raw["config"]["fancyNewThing"] = {"enabled": True}  # a field this cidrx does not know
    snap = cases.with_pools(cases.incident(), cases.default_pool(), node_pool_from(raw, 110))
    plan = plan_of(snap, template=GPU_POOL, max_pods_per_node=16)
    changed = create_step_params(plan)["differences"]
    assert "max pods per node: 16 (template 32)" in changed
    assert any(d.startswith("version: GKE's default") and "1.26.5-gke.1200" in d for d in changed)
    assert any(d.startswith("node config field fancyNewThing not copied") for d in changed)
    assert "fancyNewThing" not in create_step_params(plan)["node_pool"]["config"]


def test_an_autoscaling_template_from_zero_starts_with_one_node_and_says_so() -> None:
    raw = gpu_pool_json()
    raw["initialNodeCount"] = 0
    snap = cases.with_pools(cases.incident(), cases.default_pool(), node_pool_from(raw, 110))
    changed = create_step_params(plan_of(snap, template=GPU_POOL))["differences"]
    assert any(d.startswith("initial nodes per zone: 1 (template was created with 0") for d in changed)


def _pending(name: str, node: str = "", node_pool: str | None = None) -> KubePod:
    return KubePod("ml", name, "Pending", node, "Unschedulable", "2023-11-03T07:06:00Z", node_pool=node_pool)


def test_without_evidence_the_pool_with_most_nodes_is_copied() -> None:
    snap = gpu_snapshot()
    assert starving_pools(snap, cases.gke_of(snap)) == {}
    assert choose_template(snap, cases.gke_of(snap)).name == cases.POOL  # type: ignore[union-attr]


def test_a_pending_pod_pinned_by_node_selector_picks_its_pool() -> None:
    snap = gpu_snapshot(waiting_pods=(_pending("trainer-0", node_pool=GPU_POOL),))
    assert starving_pools(snap, cases.gke_of(snap)) == {GPU_POOL: 1}
    plan = plan_of(snap)
    assert plan.basis["template_pool"] == GPU_POOL
    assert create_step_params(plan)["node_pool"]["config"]["accelerators"][0]["acceleratorType"] == "nvidia-tesla-v100"


def test_an_autoscaler_event_naming_the_pools_instance_group_picks_it() -> None:
    message = (
        "pod triggered scale-up: [{https://www.googleapis.com/compute/v1/projects/p1/zones/australia-southeast1-a/"
        f"instanceGroups/gke-{CLUSTER}-{GPU_POOL}-1a2b3c4d-grp 1->2 (max: 4)}}]"
    )
    event = KubeEvent("ml", "Pod", "trainer-1", "FailedScaleUp", "Warning", message, 1, "2023-11-03T07:08:00Z")
    snap = gpu_snapshot(waiting_pods=(_pending("trainer-1"),), events=(event,))
    assert starving_pools(snap, cases.gke_of(snap)) == {GPU_POOL: 1}
    assert plan_of(snap).basis["template_pool"] == GPU_POOL


def test_pods_waiting_on_a_pools_nodes_pick_it() -> None:
    gpu_nodes = cases.nodes(1, "10.4.8.0/24", pool=GPU_POOL, prefix=26)
    base = gpu_snapshot()
    snap = cases.with_kube(
        base,
        nodes=(*base.kube.nodes, *gpu_nodes),
        waiting_pods=(_pending("trainer-2", node=gpu_nodes[0].name),),
    )
    assert starving_pools(snap, cases.gke_of(snap)) == {GPU_POOL: 1}
    assert plan_of(snap).basis["template_pool"] == GPU_POOL


def test_a_pinned_pod_for_an_unknown_pool_is_no_evidence() -> None:
    snap = gpu_snapshot(waiting_pods=(_pending("x", node_pool="gone-pool"),))
    assert starving_pools(snap, cases.gke_of(snap)) == {}
    assert plan_of(snap).basis["template_pool"] == cases.POOL


def test_an_incident_pool_without_extra_settings_gives_the_same_pool_as_before() -> None:
    # The bundled incident's pool has no upgrade/placement settings: the copy carries none of them.
    pool = create_step_params(plan_of(cases.incident()))["node_pool"]
    assert set(pool) == {
        "name",
        "config",
        "initialNodeCount",
        "locations",
        "maxPodsConstraint",
        "networkConfig",
        "autoscaling",
        "management",
    }
    assert pool["networkConfig"] == {"podRange": "pods-2"}


def test_collect_keeps_the_settings_and_drops_what_is_empty() -> None:
    pool = node_pool_from(gpu_pool_json(), 110)
    assert "windowsNodeConfig" not in pool.config  # {} in the dumps means unset
    assert "resourceLabels" not in pool.config and pool.resource_labels == {"team": "ml"}
    assert pool.settings == {
        "upgradeSettings": {"maxSurge": 1, "strategy": "SURGE"},
        "placementPolicy": {"type": "COMPACT"},
        "networkConfig": {"enablePrivateNodes": True},
    }
    assert pool.config_not_copied is None
    bare = dataclasses.replace(pool, settings=None)
    assert bare.settings is None


# --- against the fake: the copy GKE receives ------------------------------------------------------------

TARGET = ["--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", CLUSTER, "--no-kube"]


def test_applied_copy_has_the_templates_gpus_taints_labels_and_service_account(gcp: FakeGcp, tmp_path: Path) -> None:
    add_gpu_pool(gcp)
    plan_path = tmp_path / "plan.json"
    made = run("expand", *TARGET, "--plan", "--template-pool", GPU_POOL, "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    plan = load_plan(plan_path)
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output

    created = gcp.node_pool(PROJECT, LOCATION, CLUSTER, plan.basis["node_pool_name"])
    template = gcp.node_pool(PROJECT, LOCATION, CLUSTER, GPU_POOL)
    assert created is not None and template is not None
    for key in ("accelerators", "taints", "labels", "serviceAccount", "oauthScopes", "tags", "machineType"):
        assert created["config"][key] == template["config"][key], key
    assert created["config"]["serviceAccount"] == GPU_SERVICE_ACCOUNT
    assert created["config"]["reservationAffinity"] == template["config"]["reservationAffinity"]
    assert created["config"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert created["config"]["shieldedInstanceConfig"] == template["config"]["shieldedInstanceConfig"]
    assert created["config"]["resourceLabels"] == {"team": "ml", "cidrx-plan": plan.plan_id}
    assert created["upgradeSettings"] == template["upgradeSettings"]
    assert created["placementPolicy"] == template["placementPolicy"]
    assert created["locations"] == template["locations"]
    assert created["networkConfig"]["podRange"] == plan.basis["range_name"]
    assert created["networkConfig"]["enablePrivateNodes"] is True

    gcp.reset_log()
    again = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert again.exit_code == 0, again.output
    assert [r for r in gcp.request_log if r.method in ("POST", "PATCH", "PUT", "DELETE")] == []


def test_terraform_of_the_copy_carries_the_gpus_and_settings() -> None:
    plan = plan_of(gpu_snapshot(), template=GPU_POOL)
    text = render_terraform(plan)
    pool = resources(parse(text))[("google_container_node_pool", "gpu_pool_pods2")]
    [accelerator] = pool["node_config"][0]["guest_accelerator"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-tesla-v100", 2)
    assert accelerator["gpu_driver_installation_config"] == [{"gpu_driver_version": "LATEST"}]
    assert pool["node_config"][0]["service_account"] == GPU_SERVICE_ACCOUNT
    assert pool["node_config"][0]["reservation_affinity"] == [{"consume_reservation_type": "ANY_RESERVATION"}]
    assert pool["upgrade_settings"] == [{"max_surge": 1, "strategy": "SURGE"}]
    assert pool["placement_policy"] == [{"type": "COMPACT"}]
    assert pool["network_config"][0]["enable_private_nodes"] is True
    assert "Not translated" not in text
