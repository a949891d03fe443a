"""EksApi against moto: error mapping to exit codes, the writes apply steps use, endpoint override.

Where moto cannot produce an AWS answer (it accepts overlapping VPC CIDRs; EKS under moto's IAM
simulation fails signature checks), the test replays the answer EC2/EKS sends, through a botocore
`before-send` handler: the real client still parses it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, ParamValidationError
from moto import mock_aws
from moto.core.authorization import enable_iam_authentication
from moto.server import ThreadedMotoServer

from cidrx.errors import EXIT_ACCESS, EXIT_INTERNAL, AccessDenied, CidrxError, CloudError
from cidrx.providers.eks.api import EksApi, translate
from tests.support.estates.eks import REGION, World, fake_aws_env, moto_incident
from tests.support.fakes import eks_addons
from tests.support.ports import refused_port


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """An empty moto account: a boto3 Session of the region inside mock_aws."""
    fake_aws_env(monkeypatch)
    with mock_aws():
        yield boto3.Session(region_name=REGION)


@pytest.fixture
def world(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, World]]:
    fake_aws_env(monkeypatch)
    with moto_incident() as pair:
        yield pair


def _replay(session: Any, service: str, operation: str, status: int, body: str, content_type: str) -> None:
    """Make `operation` answer with the given HTTP response, as AWS would."""

    def handler(request: Any, **_: Any) -> Any:
        return eks_addons.raw_response(request.url, status, body.encode(), {"Content-Type": content_type})

    session.events.register_first(f"before-send.{service}.{operation}", handler)


def _ec2_error(code: str, message: str) -> str:
    return (
        f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors>"
        "<RequestID>5d7d6f0e-0000-4000-8000-000000000000</RequestID></Response>"
    )


def _one_line(err: CidrxError) -> str:
    text = str(err)
    assert "\n" not in text
    return text


# -- access (exit 6) ---------------------------------------------------------------------------------


def test_unknown_cluster_is_access_denied_naming_it(aws: Any) -> None:
    session = aws
    with pytest.raises(AccessDenied) as info:
        EksApi(REGION, session=session).describe_cluster("nope")
    assert info.value.exit_code == EXIT_ACCESS == 6
    text = _one_line(info.value)
    assert "EKS cluster 'nope' in ap-southeast-2 not found" in text and "ResourceNotFoundException" in text


def test_unknown_vpc_is_access_denied(aws: Any) -> None:
    session = aws
    with pytest.raises(AccessDenied, match=r"VPC vpc-0000000000000000f not found \(InvalidVpcID.NotFound"):
        EksApi(REGION, session=session).describe_vpc("vpc-0000000000000000f")


def test_no_credentials_is_access_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_aws_env(monkeypatch)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    # No mock: botocore finds no credentials and fails before sending anything.
    with pytest.raises(AccessDenied) as info:
        EksApi(REGION).describe_cluster("demo")
    assert info.value.exit_code == EXIT_ACCESS
    assert _one_line(info.value).startswith("no AWS credentials found for eks:DescribeCluster")


def test_unknown_profile_is_access_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_aws_env(monkeypatch)
    with pytest.raises(AccessDenied, match="AWS profile 'prod-admin' not found"):
        EksApi(REGION, "prod-admin").list_nodegroups("demo")


def test_missing_permission_names_the_iam_action(world: Any) -> None:
    session, w = world
    iam = session.client("iam")
    iam.create_user(UserName="ci")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": ["ec2:DescribeVpcs"], "Resource": "*"}],
    }
    iam.put_user_policy(UserName="ci", PolicyName="read-vpcs", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="ci")["AccessKey"]
    ci = boto3.Session(
        aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"], region_name=REGION
    )
    bad = boto3.Session(aws_access_key_id="AKIANOTAREALKEY00000", aws_secret_access_key="x", region_name=REGION)
    with enable_iam_authentication():
        api = EksApi(REGION, session=ci)
        assert api.describe_vpc(w.vpc_id)["VpcId"] == w.vpc_id
        with pytest.raises(AccessDenied) as info:
            api.describe_subnets(w.vpc_id)
        assert "permission denied for ec2:DescribeSubnets" in _one_line(info.value)
        assert "grant IAM permission ec2:DescribeSubnets" in str(info.value)
        with pytest.raises(AccessDenied, match="AWS rejected the credentials for ec2:DescribeRouteTables"):
            EksApi(REGION, session=bad).describe_route_tables(w.vpc_id)


def test_eks_access_denied_is_raised_even_for_the_addon(aws: Any) -> None:
    session = aws
    body = json.dumps({"message": "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: x"})
    for op in ("DescribeCluster", "DescribeAddon"):
        _replay(session, "eks", op, 403, body, "application/json")
    api = EksApi(REGION, session=session)
    with pytest.raises(AccessDenied, match="permission denied for eks:DescribeCluster"):
        api.describe_cluster("demo")
    # Only "not installed" (or an endpoint without the add-on API) is None; a denial is not hidden.
    with pytest.raises(AccessDenied, match="permission denied for eks:DescribeAddon"):
        api.describe_addon("demo")


def test_unreachable_endpoint_is_access_denied(monkeypatch: pytest.MonkeyPatch) -> None:
    port = refused_port()  # a port nobody listens on
    fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_MAX_ATTEMPTS="1")
    with pytest.raises(AccessDenied) as info:
        EksApi(REGION).describe_cluster("demo")
    text = _one_line(info.value)
    assert f"cannot reach http://127.0.0.1:{port}" in text and "AWS_ENDPOINT_URL" in text


# -- rejected requests (CloudError) -------------------------------------------------------------------


def test_overlapping_cidr_is_cloud_error_with_aws_message(aws: Any) -> None:
    session = aws
    vpc_id = session.client("ec2").create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    message = "The CIDR '10.0.128.0/17' conflicts with a CIDR block already associated with vpc"
    _replay(session, "ec2", "AssociateVpcCidrBlock", 400, _ec2_error("InvalidParameterValue", message), "text/xml")
    with pytest.raises(CloudError) as info:
        EksApi(REGION, session=session).associate_vpc_cidr(vpc_id, "10.0.128.0/17")
    text = _one_line(info.value)
    assert text.startswith(f"AWS rejected ec2:AssociateVpcCidrBlock on VPC {vpc_id}: InvalidParameterValue:")
    assert message in text


def test_moto_native_rejections_are_cloud_errors(world: Any) -> None:
    session, w = world
    api = EksApi(REGION, session=session)
    with pytest.raises(CloudError, match=r"InvalidSubnet.Conflict: The CIDR '10.0.208.0/28' conflicts"):
        api.create_subnet(w.vpc_id, f"{REGION}a", "10.0.208.0/28", {})
    for cidr in ("100.64.0.0/20", "100.64.16.0/20", "100.64.32.0/20", "100.64.48.0/20"):
        api.associate_vpc_cidr(w.vpc_id, cidr)
    with pytest.raises(CloudError, match=r"CidrLimitExceeded.*raise the VPC quota L-83CA0A9D"):  # 5 with the primary
        api.associate_vpc_cidr(w.vpc_id, "100.64.64.0/20")


# -- writes against moto --------------------------------------------------------------------------------


def test_writes_create_what_apply_needs(world: Any) -> None:
    session, w = world
    api = EksApi(REGION, session=session)
    ec2 = session.client("ec2")
    tag = {"cidrx.io/plan": "0123456789abcdef", "Name": "cidrx-pods-2a"}

    assoc = api.associate_vpc_cidr(w.vpc_id, "100.64.0.0/20")
    assert assoc["CidrBlock"] == "100.64.0.0/20" and assoc["AssociationId"].startswith("vpc-cidr-assoc-")
    found = api.find_vpc_cidr(w.vpc_id, "100.64.0.0/20")
    assert found is not None and found["AssociationId"] == assoc["AssociationId"]
    assert api.find_vpc_cidr(w.vpc_id, "100.64.16.0/20") is None

    subnet = api.create_subnet(w.vpc_id, f"{REGION}a", "100.64.0.0/21", tag)
    sid = subnet["SubnetId"]
    described = ec2.describe_subnets(SubnetIds=[sid])["Subnets"][0]
    assert {t["Key"]: t["Value"] for t in described["Tags"]} == tag
    assert (described["CidrBlock"], described["AvailabilityZone"]) == ("100.64.0.0/21", f"{REGION}a")
    assert [s["SubnetId"] for s in api.find_subnets_by_tag(w.vpc_id, "cidrx.io/plan", "0123456789abcdef")] == [sid]
    assert api.find_subnets_by_tag(w.vpc_id, "cidrx.io/plan", "other") == []

    assoc_id = api.associate_route_table(w.private_route_table_id, sid)
    table = ec2.describe_route_tables(RouteTableIds=[w.private_route_table_id])["RouteTables"][0]
    assert (sid, assoc_id) in {(a.get("SubnetId"), a["RouteTableAssociationId"]) for a in table["Associations"]}

    res = api.create_subnet_cidr_reservation(w.private_subnet_a, "10.0.186.16/28", "prefix delegation", tags=tag)
    assert res["ReservationType"] == "prefix" and res["Cidr"] == "10.0.186.16/28"
    assert [r["Cidr"] for r in api.get_subnet_cidr_reservations(w.private_subnet_a)] == ["10.0.186.16/28"]

    ng = api.create_nodegroup(
        clusterName=w.cluster,
        nodegroupName="cidrx-pods",
        subnets=list(w.private_subnets),
        instanceTypes=["m5.large"],
        nodeRole="arn:aws:iam::123456789012:role/eks-demo-ip-node-role",
        scalingConfig={"minSize": 1, "maxSize": 4, "desiredSize": 2},
        tags=tag,
    )
    assert ng["nodegroupName"] == "cidrx-pods" and ng["tags"] == tag
    assert sorted(api.list_nodegroups(w.cluster)) == ["cidrx-pods", "managed-ng"]


def test_addon_update_through_the_fake(aws: Any) -> None:
    session = aws
    fake = eks_addons.install(session)
    fake.put_addon("demo")
    api = EksApi(REGION, session=session)
    values = json.dumps({"env": {"AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true"}})
    update_id = api.update_addon_configuration("demo", "vpc-cni", values)
    addon = api.describe_addon("demo")
    assert addon is not None and addon["configurationValues"] == values and addon["status"] == "UPDATING"
    update = api.describe_update("demo", update_id, "vpc-cni")
    assert update["status"] == "Successful" and update["type"] == "AddonUpdate"
    assert {"type": "ResolveConflicts", "value": "PRESERVE"} in update["params"]
    assert (api.describe_addon("demo") or {})["status"] == "ACTIVE"
    assert api.describe_addon("demo", "coredns") is None
    with pytest.raises(AccessDenied, match="not found"):
        api.describe_update("demo", "00000000-0000-0000-0000-000000000000", "vpc-cni")
    with pytest.raises(CloudError, match="InvalidParameterException"):
        api.update_addon_configuration("demo", "vpc-cni", "env: [not json")


def test_vpc_cidr_quota_reads_service_quotas_and_defaults_to_5(aws: Any) -> None:
    session = aws
    quota = json.dumps({"Quota": {"QuotaCode": "L-83CA0A9D", "Value": 8.0}})
    _replay(session, "service-quotas", "GetServiceQuota", 200, quota, "application/x-amz-json-1.1")
    assert EksApi(REGION, session=session).vpc_cidr_quota() == 8
    denied = boto3.Session(region_name=REGION)
    body = json.dumps({"__type": "AccessDeniedException", "message": "not authorized"})
    _replay(denied, "service-quotas", "GetServiceQuota", 400, body, "application/x-amz-json-1.1")
    assert EksApi(REGION, session=denied).vpc_cidr_quota() == 5


# -- endpoint override --------------------------------------------------------------------------------


def test_aws_endpoint_url_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        fake_aws_env(monkeypatch, AWS_ENDPOINT_URL=f"http://{host}:{port}", NO_PROXY="127.0.0.1,localhost")
        setup = boto3.Session(region_name=REGION)
        ec2 = setup.client("ec2")
        vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.0.208.0/27")["Subnet"]["SubnetId"]
        arn = setup.client("eks").create_cluster(
            name="demo", roleArn="arn:aws:iam::123456789012:role/r", resourcesVpcConfig={"subnetIds": [subnet]}
        )["cluster"]["arn"]
        api = EksApi(REGION)  # no session: the adapter builds its own, botocore reads AWS_ENDPOINT_URL
        assert api.describe_cluster("demo")["arn"] == arn
        assert [s["SubnetId"] for s in api.describe_subnets(vpc_id)] == [subnet]
        assert api.vpc_cidr_quota() == 5
    finally:
        server.stop()


# -- translate(), the one mapping ----------------------------------------------------------------------


def _client_error(code: str, message: str, status: int = 400) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "Op")


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("UnauthorizedOperation", AccessDenied),
        ("AccessDenied", AccessDenied),
        ("AccessDeniedException", AccessDenied),
        ("AuthFailure", AccessDenied),
        ("ExpiredToken", AccessDenied),
        ("ExpiredTokenException", AccessDenied),
        ("InvalidClientTokenId", AccessDenied),
        ("UnrecognizedClientException", AccessDenied),
        ("ResourceNotFoundException", AccessDenied),
        ("InvalidVpcID.NotFound", AccessDenied),
        ("InvalidSubnetID.NotFound", AccessDenied),
        ("InvalidParameterValue", CloudError),
        ("InvalidParameterCombination", CloudError),
        ("CidrConflict", CloudError),
        ("InvalidVpc.Range", CloudError),
        ("InvalidSubnet.Conflict", CloudError),
        ("RequestLimitExceeded", CloudError),
    ],
)
def test_translate_codes(code: str, kind: type[CidrxError]) -> None:
    err = translate(_client_error(code, "first line\nsecond line"), "ec2:DescribeSubnets", "VPC vpc-1")
    assert type(err) is kind
    assert "first line second line" in _one_line(err)


def test_translate_strips_encoded_authorization_message() -> None:
    err = translate(
        _client_error(
            "UnauthorizedOperation",
            "You are not authorized to perform this operation. Encoded authorization failure message: AbCdEf0123",
            403,
        ),
        "ec2:AssociateVpcCidrBlock",
    )
    assert "AbCdEf0123" not in str(err) and "aws sts decode-authorization-message" in str(err)
    assert "grant IAM permission ec2:AssociateVpcCidrBlock" in str(err)


def test_translate_non_service_errors() -> None:
    unreachable = translate(EndpointConnectionError(endpoint_url="https://eks.xx-east-9.amazonaws.com/"), "eks:X")
    assert isinstance(unreachable, AccessDenied) and "check --region / AWS_ENDPOINT_URL" in str(unreachable)
    bug = translate(ParamValidationError(report="Missing required parameter"), "ec2:CreateSubnet")
    assert type(bug) is CidrxError and bug.exit_code == EXIT_INTERNAL
    # A non-AWS-format 403 body (proxy, emulator) still reads as access denied.
    xmlish = translate(_client_error("403", "<Error><Code>SignatureDoesNotMatch</Code></Error>", 403), "eks:X")
    assert isinstance(xmlish, AccessDenied) and "SignatureDoesNotMatch" in str(xmlish)


def test_clients_are_made_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    # An adapter built before mock_aws starts still talks to moto: nothing is created until a call.
    fake_aws_env(monkeypatch)
    api = EksApi(REGION)
    with mock_aws(), pytest.raises(AccessDenied, match="EKS cluster 'demo' in ap-southeast-2 not found"):
        api.describe_cluster("demo")
