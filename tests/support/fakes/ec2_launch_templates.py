"""DeleteLaunchTemplateVersions, which moto 5.2 does not model (it deletes whole templates only), answered
with the real EC2 client: a `before-call` handler removes the version from moto's own launch template, so
every later Describe* answer is moto's, and returns the response botocore would have parsed.

Only the latest version can be removed: moto numbers a new version len(versions) + 1 and finds a version by
its position, so a gap would make it answer wrongly. As EC2 does (EC2 API reference,
DeleteLaunchTemplateVersions), the default version is refused and a version that does not exist is reported
in `UnsuccessfullyDeletedLaunchTemplateVersions`, not raised.
"""

from __future__ import annotations

from typing import Any


def _refused(template_id: str, version: str, code: str, message: str) -> dict[str, Any]:
    return {
        "LaunchTemplateId": template_id,
        "VersionNumber": int(version),
        "ResponseError": {"Code": code, "Message": message},
    }


def delete_launch_template_versions(params: dict[str, Any], **_: Any) -> tuple[Any, dict[str, Any]]:
    from botocore.awsrequest import AWSResponse
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    body = params["body"]
    region = params["context"]["client_region"]
    template_id = str(body.get("LaunchTemplateId") or "")
    versions = [str(v) for k, v in sorted(body.items()) if k.startswith("LaunchTemplateVersion.")]
    template = ec2_backends[DEFAULT_ACCOUNT_ID][region].launch_templates[template_id]
    deleted, refused = [], []
    for v in versions:
        numbers = [x.number for x in template.versions]
        if int(v) not in numbers:
            refused.append(_refused(template_id, v, "launchTemplateVersionDoesNotExist", "no such version"))
        elif int(v) == template.default_version_number:
            refused.append(_refused(template_id, v, "launchTemplateVersionIsDefault", "it is the default version"))
        elif int(v) != numbers[-1]:
            raise AssertionError("the fake deletes only the latest launch template version")
        else:
            template.versions.pop()
            deleted.append({"LaunchTemplateId": template_id, "VersionNumber": int(v)})
    parsed = {
        "SuccessfullyDeletedLaunchTemplateVersions": deleted,
        "UnsuccessfullyDeletedLaunchTemplateVersions": refused,
        "ResponseMetadata": {"HTTPStatusCode": 200},
    }
    return AWSResponse("https://ec2.amazonaws.com/", 200, {}, None), parsed


LAUNCH_TEMPLATE_HANDLERS = (("before-call.ec2.DeleteLaunchTemplateVersions", delete_launch_template_versions),)
