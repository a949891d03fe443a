"""Reading emitted HCL back, shared by the Terraform unit tests and the end-to-end scenarios: python-hcl2
parsing normalised across its versions, the import blocks as {address: id}, and `terraform fmt -check`
(which needs a terraform binary; tests using it are decorated `needs_terraform` and skip, saying why, without
it, or fail when CIDRX_REQUIRE_TOOLS requires it: tests/support/tools_required.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.tools_required import needs_tool

TERRAFORM = shutil.which("terraform")
needs_terraform = needs_tool("terraform", "for `terraform fmt`")
HCL2_REASON = "python-hcl2 is in the test extra: pip install -e .[test]"


# python-hcl2 4.x returns bare strings; 5+ keeps quotes and adds __ markers.


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        return str(json.loads(text.replace("$${", "${").replace("%%{", "%{")))
    return text


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        return {_unquote(k): _norm(v) for k, v in value.items() if not k.startswith("__")}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        return _unquote(value)
    return value


def parse(text: str) -> dict[str, Any]:
    hcl2 = pytest.importorskip("hcl2", reason=HCL2_REASON)
    return dict(_norm(hcl2.loads(text)))


def ref(value: Any) -> str:
    """A reference expression as text, without the `${...}` python-hcl2 puts around top-level ones."""
    text = str(value)
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def resources(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for entry in doc.get("resource", []):
        for rtype, named in entry.items():
            for name, body in named.items():
                out[(rtype, name)] = body
    return out


def imports(doc: dict[str, Any]) -> dict[str, str]:
    return {ref(i["to"]): i["id"] for i in doc.get("import", [])}


def fmt_check(*paths: Path) -> subprocess.CompletedProcess[str]:
    """`terraform fmt -check -diff` on files or directories (call only from tests marked needs_terraform)."""
    assert TERRAFORM is not None
    return subprocess.run(
        [TERRAFORM, "fmt", "-check", "-diff", *map(str, paths)], capture_output=True, text=True, timeout=60
    )
