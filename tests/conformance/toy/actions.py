"""The toy IPAM's one step action, declared beside its executor."""

from __future__ import annotations

from typing import Any

from cidrx.registry import Action

CREATE = "toy.create-pool"
CREATE_PERMISSIONS = ("kubernetes: toypools.toy.cidrx.test create",)


class CreatePoolExecutor:
    """Creates the planned toy pool (check: already there? act: create; nothing to wait for)."""

    def check(self, step: Any, params: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        found = ctx.apis.kube.get_custom("toy.cidrx.test", "v1", "toypools", params["name"])
        return {"name": params["name"]} if found is not None else None

    def act(self, step: Any, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        body = {"metadata": {"name": params["name"]}, "spec": {"cidr": params["cidr"]}}
        ctx.apis.kube.create_custom("toy.cidrx.test", "v1", "toypools", body)
        return {"name": params["name"]}

    def wait(self, step: Any, params: dict[str, Any], ctx: Any, outputs: dict[str, Any]) -> None:
        return None

    def verify(self, step: Any, params: dict[str, Any], ctx: Any, outputs: dict[str, Any]) -> None:
        return None


CREATE_POOL = Action(CREATE, CREATE_PERMISSIONS, CreatePoolExecutor, no_undo="the toy keeps what it makes")
