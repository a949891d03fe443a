"""The one door to AWS for the EKS target: a thin boto3 adapter plus the single AWS-error translator.

Why it exists: collect/steps code must be testable against moto and must not pay for boto3 at import
time (`cidrx --help` budget), and every AWS failure must reach the user as one actionable line with the
right exit code. So boto3/botocore are imported only inside functions here, every list call is
paginated, results are the plain dicts boto3 returns, and every call runs under `_aws(...)`, which
hands any SDK exception to `translate()`. Each request (each page of a list) goes through `_call`, under
cidrx's one retry policy (cidrx.transport.retry; botocore's own retries are off).

Endpoint overrides: botocore itself honours `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_<SERVICE>` (and
`endpoint_url` in the profile), so nothing here passes an endpoint; tests point the CLI at a moto
server that way.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from cidrx.errors import AccessDenied, CidrxError, CloudError, InvalidInput, RetriesExhausted, Unreachable
from cidrx.transport import activity
from cidrx.transport.environment import check_proxy_environment
from cidrx.transport.retry import (
    RETRY_LATER_HINT,
    Retryable,
    RetryPolicy,
    call_with_retry,
    certificate_failure,
    default_policy,
    parse_retry_after,
    request_timeout,
    status_is_transient,
    with_gave_up_note,
)

if TYPE_CHECKING:
    from mypy_boto3_ec2.client import EC2Client
    from mypy_boto3_eks.client import EKSClient

Json = dict[str, Any]

VPC_CNI = "vpc-cni"
# Service Quotas code of "IPv4 CIDR blocks per VPC" (service code "vpc").
VPC_CIDR_QUOTA_CODE = "L-83CA0A9D"
DEFAULT_VPC_CIDR_QUOTA = 5

# What `collect_eks` needs; docs and plan `permissions` can quote it. DescribeSecurityGroups is only used
# when EKS does not report the cluster security group.
COLLECT_PERMISSIONS = (
    "eks:DescribeCluster",
    "eks:ListNodegroups",
    "eks:DescribeNodegroup",
    "eks:DescribeAddon",
    "eks:DescribeAddonConfiguration",
    "ec2:DescribeVpcs",
    "ec2:DescribeSubnets",
    "ec2:DescribeRouteTables",
    "ec2:DescribeVpcPeeringConnections",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeInstanceTypes",
    "ec2:GetSubnetCidrReservations",
    "ec2:DescribeSecurityGroups",
    "servicequotas:GetServiceQuota",
    # Routed space the VPC cannot see locally (cidrx.providers.eks.collect.routes): the transit gateway route tables
    # of its attachments and the managed prefix lists routes refer to.
    "ec2:DescribeTransitGatewayAttachments",
    "ec2:SearchTransitGatewayRoutes",
    "ec2:GetManagedPrefixListEntries",
    # Whether the VPC's CIDRs come from an AWS VPC IPAM pool (cidrx.providers.eks.collect.ipam_pools), best effort.
    "ec2:DescribeIpamPools",
    "ec2:GetIpamPoolAllocations",
    "ec2:GetIpamPoolCidrs",
    # Self-managed node groups (cidrx.providers.eks.collect.provisioners).
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:DescribeInstances",
)
# What fleet mode (`diagnose --eks --all-clusters`) adds: the listing, and the caller's account id to
# name kubeconfig contexts by cluster ARN (GetCallerIdentity needs no grant, but is listed for clarity).
FLEET_PERMISSIONS = ("eks:ListClusters", "sts:GetCallerIdentity")

# Error codes, by what the user has to do about them.
_PERMISSION_CODES = frozenset({"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"})
_CREDENTIAL_CODES = frozenset(
    {
        "AuthFailure",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "SignatureDoesNotMatch",
        "MissingAuthenticationToken",
        "RequestExpired",
    }
)
_NOT_FOUND_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "InvalidVpcID.NotFound",
        "InvalidSubnetID.NotFound",
        "InvalidRouteTableID.NotFound",
        "InvalidGroup.NotFound",
        "InvalidVpcPeeringConnectionID.NotFound",
        "InvalidRouteTableId.NotFound",
        "InvalidPrefixListID.NotFound",
        "InvalidPrefixListId.NotFound",
    }
)
_REJECTED_CODES = frozenset(
    {
        "InvalidParameterValue",
        "InvalidParameterCombination",
        "InvalidParameterException",
        "CidrConflict",
        "CidrLimitExceeded",
        "InvalidVpc.Range",
        "InvalidSubnet.Range",
        "InvalidSubnet.Conflict",
    }
)
_PEERING_STATES = frozenset({"active", "pending-acceptance", "provisioning"})
CALL_TIMEOUT = 60.0  # seconds per HTTP request (botocore's own default), CIDRX_HTTP_TIMEOUT overrides it
_CREDENTIALS_HINT = "use --profile / AWS_PROFILE, run `aws sso login`, or export AWS_ACCESS_KEY_ID/SECRET"


class GarbledAnswer(Exception):
    """A success answer without what it must hold: cut off or garbled between AWS and cidrx."""


# botocore's protocols whose answers are JSON. Their parser reads a success body that is not JSON as
# {"message": body} (botocore/parsers.py BaseJSONParser._parse_body_as_json), so a cut-off answer would
# look like an empty one (a ListNodegroups without node groups); and it decodes the body as UTF-8 outside
# that guard, so a garbled byte raised UnicodeDecodeError. The XML parsers raise ResponseParserError.
_JSON_PROTOCOLS = frozenset({"json", "rest-json"})


def check_answer(operation_model: Any, response_dict: Any, **_: Any) -> None:
    """botocore `before-parse` handler: a 2xx JSON answer must be whole JSON, else GarbledAnswer (a transient
    failure of the call: `classify` retries it for reads)."""
    status = int(response_dict.get("status_code") or 0)
    body = response_dict.get("body")
    if not 200 <= status < 300 or not isinstance(body, bytes) or not body.strip():
        return
    if operation_model.has_streaming_output or operation_model.service_model.resolved_protocol not in _JSON_PROTOCOLS:
        return
    try:
        json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise GarbledAnswer(f"the answer is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise GarbledAnswer(f"the answer is not whole JSON ({exc})") from None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _xml_field(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", text)
    return _one_line(match.group(1)) if match else ""


def translate(exc: BaseException, action: str, subject: str | None = None) -> CidrxError:
    """Map an SDK exception raised while doing `action` (an IAM action, e.g. "ec2:DescribeSubnets") to
    the cidrx error the user sees. `subject` names the object, e.g. "EKS cluster 'demo' in ap-southeast-2".
    """
    from botocore import exceptions as bx

    on = f" on {subject}" if subject else ""
    if isinstance(exc, CidrxError):
        return exc
    if isinstance(exc, bx.ProfileNotFound):
        return AccessDenied(
            f"AWS profile {exc.kwargs.get('profile')!r} not found",
            hint="check --profile / AWS_PROFILE and ~/.aws/config",
        )
    from botocore.parsers import ResponseParserError

    if isinstance(exc, GarbledAnswer | ResponseParserError):
        # A read was retried: `with_gave_up_note` makes this RetriesExhausted (exit 7). A write is never
        # repeated (it may have been carried out): its apply stops (exit 5) and the same command resumes.
        return CloudError(
            f"{action}{on}: AWS's answer could not be read ({_one_line(str(exc))[:200]})",
            hint="run the same command again (a change it asked for may have been made: it checks first)",
        )
    if isinstance(exc, bx.InvalidRegionError):
        return InvalidInput(
            f"{_one_line(str(exc))} (an AWS region is a name such as us-east-1)",
            hint="check --region, AWS_REGION and AWS_DEFAULT_REGION",
        )
    if isinstance(exc, bx.ConfigParseError | bx.InvalidConfigError):
        return InvalidInput(
            f"cannot read the AWS configuration: {_one_line(str(exc))}",
            hint="check AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE (default ~/.aws/config, ~/.aws/credentials)",
        )
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return AccessDenied(f"no AWS credentials found for {action}", hint=_CREDENTIALS_HINT)
    if isinstance(
        exc,
        bx.CredentialRetrievalError
        | bx.TokenRetrievalError
        | bx.SSOError
        | bx.NoAuthTokenError
        | bx.UnknownCredentialError,
    ):
        return AccessDenied(
            f"could not load AWS credentials for {action}: {_one_line(str(exc))}", hint=_CREDENTIALS_HINT
        )
    if isinstance(exc, bx.SSLError) or (isinstance(exc, bx.ConnectionError) and certificate_failure(exc)):
        url = exc.kwargs.get("endpoint_url", "the AWS endpoint")
        return AccessDenied(
            f"the TLS certificate of {url} could not be verified for {action}: "
            f"{_one_line(certificate_failure(exc) or str(exc))}",
            hint="check the CA bundle (AWS_CA_BUNDLE, ca_bundle in ~/.aws/config) and any proxy in between",
        )
    if isinstance(exc, bx.ConnectionError):
        url = exc.kwargs.get("endpoint_url", "the AWS endpoint")
        return Unreachable(f"cannot reach {url} for {action}", hint="check --region / AWS_ENDPOINT_URL and the network")
    if isinstance(exc, bx.ReadTimeoutError | bx.ConnectionClosedError):
        # A hung endpoint is as unreachable as a refused one (exit 6, like the Kubernetes API): 7 is kept for
        # answers that say "try later" (5xx, throttling).
        url = exc.kwargs.get("endpoint_url", "the AWS endpoint")
        return Unreachable(
            f"{url} did not answer {action}{on} ({_one_line(str(exc))})",
            hint="check --region / AWS_ENDPOINT_URL, any proxy, and the network",
        )
    if isinstance(exc, bx.ParamValidationError):
        return CidrxError(f"internal error: cidrx built an invalid {action} request: {_one_line(str(exc))}")
    if isinstance(exc, bx.ClientError):
        err = exc.response.get("Error", {})
        code = str(err.get("Code", "Unknown"))
        message = _one_line(str(err.get("Message", "")))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if code.isdigit():
            # The body was not in the service's error format (a proxy, or an emulator answering a JSON
            # API in XML): botocore then reports the HTTP status as the code. Recover what we can.
            inner_code, inner_message = _xml_field(message, "Code"), _xml_field(message, "Message")
            code = inner_code or ("AccessDenied" if status in (401, 403) else code)
            message = inner_message or message[:200]
        if code in _PERMISSION_CODES:
            # EC2 appends a long encoded blob; it helps only through sts:DecodeAuthorizationMessage.
            head, sep, _ = message.partition("Encoded authorization failure message:")
            extra = " (decode the rest with `aws sts decode-authorization-message`)" if sep else ""
            return AccessDenied(
                f"permission denied for {action}{on}: {head.strip()}{extra}",
                hint=f"grant IAM permission {action} to the caller",
            )
        if code in _CREDENTIAL_CODES:
            return AccessDenied(
                f"AWS rejected the credentials for {action} ({code}: {message})", hint=_CREDENTIALS_HINT
            )
        if code in _NOT_FOUND_CODES:
            what = subject or "AWS resource"
            return AccessDenied(
                f"{what} not found ({code}: {message})",
                hint="check --cluster, --region and --profile (the account the credentials belong to)",
            )
        if code in _REJECTED_CODES:
            quota = code == "CidrLimitExceeded"
            hint = f"raise the VPC quota {VPC_CIDR_QUOTA_CODE} (IPv4 CIDR blocks per VPC) in Service Quotas"
            return CloudError(f"AWS rejected {action}{on}: {code}: {message}", hint=hint if quota else None)
        return CloudError(f"{action}{on} failed: {code}: {message}", hint="retry; if it persists, check AWS Health")
    if isinstance(exc, bx.BotoCoreError):
        return CloudError(f"{action}{on} failed: {_one_line(str(exc))}", hint="retry; check the network")
    return CidrxError(f"internal error during {action}: {type(exc).__name__}: {_one_line(str(exc))}")


@contextmanager
def _aws(action: str, subject: str | None = None, *, announce: bool = True) -> Iterator[None]:
    """Run an SDK call; any botocore exception leaves as the CidrxError `translate` picks. `announce`: tell
    the activity listeners (spinner, -v) about it; off for local work such as building a client, which
    would otherwise name itself while the request that needed the client is the one waiting."""
    if announce:
        activity.reading(f"{action} {subject}" if subject else action)
    try:
        yield
    except CidrxError:
        raise
    except Exception as exc:
        from botocore.exceptions import BotoCoreError, ClientError
        from botocore.parsers import ResponseParserError

        if isinstance(exc, ClientError | BotoCoreError | GarbledAnswer | ResponseParserError):
            raise with_gave_up_note(translate(exc, action, subject), exc) from exc
        if isinstance(exc, KeyError):  # a field a success answer must hold is missing (the blocks only index answers)
            raise RetriesExhausted(
                f"{action}{f' on {subject}' if subject else ''}: AWS's answer lacks {exc} (cut off or garbled)",
                hint=RETRY_LATER_HINT,
            ) from exc
        raise


# Error codes AWS uses for "slow down" (the request was refused, so even a write may be sent again).
THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "EC2ThrottledException",
        "SlowDown",
        "BandwidthLimitExceeded",
    }
)
# Codes of a server-side failure: retried for reads only (a write may have happened).
_SERVER_FAULT_CODES = frozenset(
    {"InternalError", "InternalFailure", "InternalServerError", "ServiceUnavailable", "Unavailable", "RequestTimeout"}
)


def classify(exc: BaseException, *, write: bool) -> Retryable | None:
    """The retry policy's view of a botocore failure (see cidrx.transport.retry for what is safe to retry)."""
    from botocore import exceptions as bx
    from botocore.parsers import ResponseParserError

    if isinstance(exc, GarbledAnswer | ResponseParserError):
        # A 2xx whose body was cut or garbled (botocore: "invalid XML received. Further retries may succeed").
        # For a write the request did reach AWS: not repeated, the next run's check-then-act finds it.
        return None if write else Retryable()
    if isinstance(exc, bx.ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        meta = exc.response.get("ResponseMetadata", {})
        status = int(meta.get("HTTPStatusCode") or 0)
        headers = {str(k).lower(): v for k, v in (meta.get("HTTPHeaders") or {}).items()}
        hint = parse_retry_after(headers.get("retry-after"))
        if code in THROTTLING_CODES or status == 429:
            return Retryable(hint)
        if not write and (code in _SERVER_FAULT_CODES or status_is_transient(status, write=False)):
            return Retryable(hint)
        return None
    # Failures to connect: nothing reached AWS. (SSLError is a ConnectionError too, but never transient.)
    if isinstance(exc, bx.EndpointConnectionError | bx.ConnectTimeoutError | bx.ProxyConnectionError):
        return Retryable()
    # The connection broke or timed out after the request was sent: reads only.
    if not write and isinstance(exc, bx.ConnectionClosedError | bx.ReadTimeoutError):
        return Retryable()
    return None


_classify_read = functools.partial(classify, write=False)
_classify_write = functools.partial(classify, write=True)


@functools.cache
def _partitions() -> tuple[tuple[frozenset[str], str], ...]:
    """(regions, DNS suffix) of every AWS partition the installed botocore knows."""
    import botocore.session

    data = botocore.session.get_session().get_data("endpoints")
    return tuple((frozenset(p.get("regions") or {}), str(p.get("dnsSuffix") or "")) for p in data.get("partitions", []))


def check_region(region: str, endpoint_url: str) -> None:
    """Refuse a region no AWS partition has, when the client would go to AWS's own endpoint for it: the
    made-up hostname does not resolve, and connection retries would only delay a vaguer error. An endpoint
    override (AWS_ENDPOINT_URL, a profile's endpoint_url) is the user's choice and is left alone."""
    host = urlsplit(endpoint_url).hostname or ""
    partitions = _partitions()
    if not any(suffix and host.endswith(f".{suffix}") for _, suffix in partitions):
        return
    if any(region in regions for regions, _ in partitions):
        return
    import botocore

    raise InvalidInput(
        f"unknown AWS region {region!r}: no AWS partition has it",
        hint=f"check --region (e.g. us-east-1); a region newer than botocore {botocore.__version__} needs a "
        "newer boto3, or AWS_ENDPOINT_URL",
    )


def _bad_endpoint(detail: str) -> InvalidInput:
    return InvalidInput(
        f"the AWS endpoint is not usable: {_one_line(detail)}",
        hint="check AWS_ENDPOINT_URL (and endpoint_url in the AWS config): an http:// or https:// URL such as "
        "https://ec2.us-east-1.amazonaws.com, or unset it",
    )


def _tag_spec(resource_type: str, tags: Mapping[str, str]) -> list[Any]:
    if not tags:
        return []
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def _vpc_filter(vpc_id: str) -> list[Any]:
    return [{"Name": "vpc-id", "Values": [vpc_id]}]


class EksApi:
    """Thin, paginating adapter over the EC2, EKS and Service Quotas clients of one region/profile.

    Clients are created on first use, so a test can hook events on an injected session after building
    the adapter.
    """

    def __init__(self, region: str, profile: str | None = None, *, session: Any | None = None) -> None:
        self.region = region
        self.profile = profile
        self._session = session
        self._clients: dict[str, Any] = {}

    # -- plumbing -----------------------------------------------------------------------------------

    def _client(self, service: str) -> Any:
        client = self._clients.get(service)
        if client is None:
            check_proxy_environment()
            with _aws(f"creating the {service} client", announce=False):
                if self._session is None:
                    import boto3

                    self._session = boto3.Session(profile_name=self.profile, region_name=self.region)
                from botocore.config import Config

                # botocore's own retries are off: cidrx.transport.retry is the one policy (it also knows which
                # failures are safe to retry for a write, which botocore's modes do not distinguish).
                timeout = request_timeout(CALL_TIMEOUT)
                config = Config(
                    retries={"total_max_attempts": 1},
                    user_agent_extra="cidrx",
                    read_timeout=timeout,
                    connect_timeout=min(timeout, CALL_TIMEOUT),
                )
                session: Any = self._session
                try:
                    client = session.client(service, region_name=self.region, config=config)
                except ValueError as exc:  # botocore's "Invalid endpoint: ..." / urllib's "Invalid IPv6 URL"
                    from botocore.exceptions import BotoCoreError

                    if isinstance(exc, BotoCoreError):  # InvalidRegionError is a ValueError too
                        raise
                    raise _bad_endpoint(str(exc)) from None
            client.meta.events.register("before-parse", check_answer)
            endpoint = str(client.meta.endpoint_url)
            if urlsplit(endpoint).scheme not in ("http", "https"):
                raise _bad_endpoint(f"{endpoint!r} is not an http:// or https:// URL")
            check_region(self.region, endpoint)
            self._clients[service] = client
        return client

    def _call(
        self,
        fn: Any,
        /,
        *,
        write: bool = False,
        policy: RetryPolicy | None = None,
        want: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """One SDK request under the retry policy (run inside `_aws`, which translates what escapes). `want`:
        the key a success answer must hold; one without it was cut or garbled on the way (GarbledAnswer),
        a transient failure of this call like a 5xx."""

        def once() -> Any:
            resp = fn(**kwargs)
            if want is not None and (not isinstance(resp, dict) or want not in resp):
                raise GarbledAnswer(f"the answer has no {want!r}: it was cut off or garbled on the way")
            return resp

        return call_with_retry(once, _classify_write if write else _classify_read, policy)

    def _pages(self, fn: Any, items: str, /, *, token: str = "NextToken", **kwargs: Any) -> list[Any]:
        """Every item of a paginated read, each page its own retried request (resumes at its token)."""
        out: list[Any] = []
        request = dict(kwargs)
        while True:
            page = self._call(fn, **request)
            out.extend(dict(item) if isinstance(item, dict) else item for item in page.get(items, []))
            next_token = page.get(token)
            if not next_token:
                return out
            request[token] = next_token

    @property
    def _ec2(self) -> EC2Client:
        client: EC2Client = self._client("ec2")
        return client

    @property
    def _eks(self) -> EKSClient:
        client: EKSClient = self._client("eks")
        return client

    def _cluster_subject(self, cluster: str) -> str:
        return f"EKS cluster {cluster!r} in {self.region}"

    # -- reads --------------------------------------------------------------------------------------

    def list_clusters(self) -> list[str]:
        """Names of every EKS cluster in the region (ListClusters, every page)."""
        with _aws("eks:ListClusters", f"EKS clusters in {self.region}"):
            return [str(n) for n in self._pages(self._eks.list_clusters, "clusters", token="nextToken")]

    def caller_account(self) -> tuple[str, str] | None:
        """(partition, account id) of the credentials (sts:GetCallerIdentity), or None when STS cannot
        answer: it only names kubeconfig contexts, which can be matched without it."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            sts = self._client("sts")
            policy = replace(default_policy(), max_attempts=3, budget=5.0)
            resp = self._call(sts.get_caller_identity, policy=policy)
            arn, account = str(resp["Arn"]), str(resp["Account"])
        except (ClientError, BotoCoreError, CidrxError, KeyError, TypeError):
            return None
        partition = arn.split(":")[1] if arn.count(":") >= 5 else "aws"
        return (partition or "aws", account) if account.isdigit() else None

    def describe_cluster(self, name: str) -> Json:
        with _aws("eks:DescribeCluster", self._cluster_subject(name)):
            return dict(self._call(self._eks.describe_cluster, want="cluster", name=name)["cluster"])

    def list_nodegroups(self, cluster: str) -> list[str]:
        with _aws("eks:ListNodegroups", self._cluster_subject(cluster)):
            return [
                str(n)
                for n in self._pages(self._eks.list_nodegroups, "nodegroups", token="nextToken", clusterName=cluster)
            ]

    def describe_nodegroup(self, cluster: str, name: str) -> Json:
        with _aws("eks:DescribeNodegroup", f"node group {name!r} of {self._cluster_subject(cluster)}"):
            resp = self._call(self._eks.describe_nodegroup, want="nodegroup", clusterName=cluster, nodegroupName=name)
            return dict(resp["nodegroup"])

    def describe_vpc(self, vpc_id: str) -> Json:
        with _aws("ec2:DescribeVpcs", f"VPC {vpc_id}"):
            vpcs = self._call(self._ec2.describe_vpcs, want="Vpcs", VpcIds=[vpc_id])["Vpcs"]
        if not vpcs:
            raise AccessDenied(f"VPC {vpc_id} not found in {self.region}", hint="check --region and --profile")
        return dict(vpcs[0])

    def describe_subnets(self, vpc_id: str) -> list[Json]:
        with _aws("ec2:DescribeSubnets", f"VPC {vpc_id}"):
            return self._pages(self._ec2.describe_subnets, "Subnets", Filters=_vpc_filter(vpc_id))

    def describe_subnets_by_ids(self, subnet_ids: Sequence[str]) -> list[Json]:
        if not subnet_ids:
            return []
        with _aws("ec2:DescribeSubnets", f"subnets {', '.join(subnet_ids)}"):
            return self._pages(self._ec2.describe_subnets, "Subnets", SubnetIds=list(subnet_ids))

    def describe_route_tables(self, vpc_id: str) -> list[Json]:
        with _aws("ec2:DescribeRouteTables", f"VPC {vpc_id}"):
            return self._pages(self._ec2.describe_route_tables, "RouteTables", Filters=_vpc_filter(vpc_id))

    def describe_peerings(self, vpc_id: str) -> list[Json]:
        """Active or pending peerings where the VPC is either side, each once."""
        found: dict[str, Json] = {}
        with _aws("ec2:DescribeVpcPeeringConnections", f"VPC {vpc_id}"):
            for side in ("requester-vpc-info.vpc-id", "accepter-vpc-info.vpc-id"):
                filters: list[Any] = [
                    {"Name": side, "Values": [vpc_id]},
                    {"Name": "status-code", "Values": sorted(_PEERING_STATES)},
                ]
                for pcx in self._pages(
                    self._ec2.describe_vpc_peering_connections, "VpcPeeringConnections", Filters=filters
                ):
                    found[pcx.get("VpcPeeringConnectionId", "")] = pcx
        # Checked again here: the filters are a server-side nicety some endpoints (moto) ignore.
        return [
            p
            for p in found.values()
            if p.get("Status", {}).get("Code") in _PEERING_STATES
            and vpc_id in (p.get("RequesterVpcInfo", {}).get("VpcId"), p.get("AccepterVpcInfo", {}).get("VpcId"))
        ]

    def describe_network_interfaces(self, vpc_id: str) -> list[Json]:
        with _aws("ec2:DescribeNetworkInterfaces", f"VPC {vpc_id}"):
            return self._pages(self._ec2.describe_network_interfaces, "NetworkInterfaces", Filters=_vpc_filter(vpc_id))

    def describe_instance_types(self, names: Sequence[str]) -> list[Json]:
        wanted = sorted(set(names))
        if not wanted:
            return []
        with _aws("ec2:DescribeInstanceTypes", f"instance types {', '.join(wanted)}"):
            return self._pages(self._ec2.describe_instance_types, "InstanceTypes", InstanceTypes=wanted)

    def describe_security_groups_by_tag(self, vpc_id: str, key: str, value: str) -> list[Json]:
        with _aws("ec2:DescribeSecurityGroups", f"VPC {vpc_id}"):
            filters: list[Any] = [*_vpc_filter(vpc_id), {"Name": f"tag:{key}", "Values": [value]}]
            return self._pages(self._ec2.describe_security_groups, "SecurityGroups", Filters=filters)

    def describe_addon(self, cluster: str, name: str = VPC_CNI) -> Json | None:
        """The managed add-on, or None when the cluster runs it self-managed (not installed as add-on).

        An endpoint that does not implement the add-on API at all (moto 5 answers HTTP 404 with the bare
        code "404") also gives None: EKS itself always names its errors (ResourceNotFoundException), so
        this cannot swallow a real one, and AccessDeniedException is still raised as AccessDenied.
        """
        from botocore.exceptions import ClientError

        with _aws("eks:DescribeAddon", f"add-on {name!r} of {self._cluster_subject(cluster)}"):
            try:
                return dict(
                    self._call(self._eks.describe_addon, want="addon", clusterName=cluster, addonName=name)["addon"]
                )
            except ClientError as exc:
                if str(exc.response.get("Error", {}).get("Code", "")) in ("ResourceNotFoundException", "404"):
                    return None
                raise

    def addon_configuration_schema(self, name: str, version: str) -> str:
        """DescribeAddonConfiguration's configurationSchema (JSON Schema text) of an add-on version, or ""
        when it cannot be read (no permission, an endpoint without the operation): plans then say the
        configuration they write was not checked beforehand (EKS still validates the update itself)."""
        from botocore.exceptions import BotoCoreError, ClientError

        if not version:
            return ""
        try:
            with _aws("eks:DescribeAddonConfiguration", f"add-on {name!r} {version}"):
                resp = self._call(self._eks.describe_addon_configuration, addonName=name, addonVersion=version)
        except (CidrxError, ClientError, BotoCoreError):
            return ""
        return str(resp.get("configurationSchema") or "")

    def get_subnet_cidr_reservations(self, subnet_id: str) -> list[Json]:
        """IPv4 CIDR reservations of a subnet (GetSubnetCidrReservations has no boto3 paginator)."""
        with _aws("ec2:GetSubnetCidrReservations", f"subnet {subnet_id}"):
            return self._pages(self._ec2.get_subnet_cidr_reservations, "SubnetIpv4CidrReservations", SubnetId=subnet_id)

    def describe_tgw_attachments(self, vpc_id: str) -> list[Json]:
        """The VPC's transit gateway attachments (any state but deleted), with their route table association."""
        with _aws("ec2:DescribeTransitGatewayAttachments", f"VPC {vpc_id}"):
            filters: list[Any] = [
                {"Name": "resource-id", "Values": [vpc_id]},
                {"Name": "resource-type", "Values": ["vpc"]},
            ]
            found = self._pages(
                self._ec2.describe_transit_gateway_attachments, "TransitGatewayAttachments", Filters=filters
            )
        # Checked again: the filters are a server-side nicety an endpoint may ignore.
        return [a for a in found if a.get("ResourceId") == vpc_id and a.get("State") not in ("deleted", "deleting")]

    def search_tgw_routes(self, route_table_id: str) -> list[Json]:
        """Every static or propagated route of a transit gateway route table, active or blackhole (each page
        its own request; SearchTransitGatewayRoutes requires a filter)."""
        with _aws("ec2:SearchTransitGatewayRoutes", f"transit gateway route table {route_table_id}"):
            filters: list[Any] = [
                {"Name": "type", "Values": ["static", "propagated"]},
                {"Name": "state", "Values": ["active", "blackhole"]},
            ]
            return self._pages(
                self._ec2.search_transit_gateway_routes,
                "Routes",
                TransitGatewayRouteTableId=route_table_id,
                Filters=filters,
            )

    def get_prefix_list_entries(self, prefix_list_id: str) -> list[Json]:
        with _aws("ec2:GetManagedPrefixListEntries", f"prefix list {prefix_list_id}"):
            return self._pages(self._ec2.get_managed_prefix_list_entries, "Entries", PrefixListId=prefix_list_id)

    def describe_ipam_pools(self) -> list[Json]:
        """Every IPAM pool the account sees in the region. An answer that is not EC2's (an endpoint without
        IPAM, a proxy's error page) is a CloudError here, not a bug: the caller treats IPAM as unreadable."""
        from botocore.parsers import ResponseParserError

        with _aws("ec2:DescribeIpamPools", f"IPAM pools in {self.region}"):
            try:
                return self._pages(self._ec2.describe_ipam_pools, "IpamPools")
            except ResponseParserError as exc:
                raise CloudError(f"ec2:DescribeIpamPools gave an answer that is not EC2's: {str(exc)[:80]}") from exc

    def get_ipam_pool_allocations(self, pool_id: str) -> list[Json]:
        with _aws("ec2:GetIpamPoolAllocations", f"IPAM pool {pool_id}"):
            return self._pages(self._ec2.get_ipam_pool_allocations, "IpamPoolAllocations", IpamPoolId=pool_id)

    def get_ipam_pool_cidrs(self, pool_id: str) -> list[Json]:
        with _aws("ec2:GetIpamPoolCidrs", f"IPAM pool {pool_id}"):
            return self._pages(self._ec2.get_ipam_pool_cidrs, "IpamPoolCidrs", IpamPoolId=pool_id)

    def vpc_cidr_quota(self) -> int:
        """Applied value of "IPv4 CIDR blocks per VPC".

        Falls back to AWS's default of 5 when Service Quotas cannot answer (no
        servicequotas:GetServiceQuota permission, endpoint unreachable or not implemented): the quota
        only bounds how many CIDRs a plan may add, and 5 is the value unless someone raised it.
        """
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            quotas = self._client("service-quotas")
            # Best effort: a short retry budget, so an unreachable Service Quotas costs seconds, not a minute.
            policy = replace(default_policy(), max_attempts=3, budget=5.0)
            resp = self._call(quotas.get_service_quota, policy=policy, ServiceCode="vpc", QuotaCode=VPC_CIDR_QUOTA_CODE)
            return int(resp["Quota"]["Value"])
        except (ClientError, BotoCoreError, KeyError, TypeError, ValueError):
            return DEFAULT_VPC_CIDR_QUOTA

    # -- writes (apply steps); each returns what it created ------------------------------------------

    def associate_vpc_cidr(self, vpc_id: str, cidr: str = "", *, pool_id: str = "", netmask_length: int = 0) -> Json:
        """Associate `cidr`, or (with `pool_id`) a /`netmask_length` that the IPAM pool picks."""
        where: dict[str, Any] = (
            {"Ipv4IpamPoolId": pool_id, "Ipv4NetmaskLength": netmask_length} if pool_id else {"CidrBlock": cidr}
        )
        with _aws("ec2:AssociateVpcCidrBlock", f"VPC {vpc_id}" + (f" (IPAM pool {pool_id})" if pool_id else "")):
            resp = self._call(self._ec2.associate_vpc_cidr_block, write=True, VpcId=vpc_id, **where)
            return dict(resp["CidrBlockAssociation"])

    def find_vpc_cidr(self, vpc_id: str, cidr: str) -> Json | None:
        """The VPC's association of `cidr` unless it is gone or failed."""
        vpc = self.describe_vpc(vpc_id)
        for assoc in vpc.get("CidrBlockAssociationSet", []):
            state = assoc.get("CidrBlockState", {}).get("State", "")
            if assoc.get("CidrBlock") == cidr and state not in ("disassociating", "disassociated", "failing", "failed"):
                return dict(assoc)
        return None

    def create_subnet(self, vpc_id: str, az: str, cidr: str, tags: Mapping[str, str]) -> Json:
        with _aws("ec2:CreateSubnet", f"VPC {vpc_id}"):
            resp = self._call(
                self._ec2.create_subnet,
                write=True,
                VpcId=vpc_id,
                AvailabilityZone=az,
                CidrBlock=cidr,
                TagSpecifications=_tag_spec("subnet", tags),
            )
            return dict(resp["Subnet"])

    def find_subnets_by_tag(self, vpc_id: str, key: str, value: str) -> list[Json]:
        with _aws("ec2:DescribeSubnets", f"VPC {vpc_id}"):
            filters: list[Any] = [*_vpc_filter(vpc_id), {"Name": f"tag:{key}", "Values": [value]}]
            return self._pages(self._ec2.describe_subnets, "Subnets", Filters=filters)

    def associate_route_table(self, route_table_id: str, subnet_id: str) -> str:
        with _aws("ec2:AssociateRouteTable", f"route table {route_table_id}"):
            resp = self._call(
                self._ec2.associate_route_table, write=True, RouteTableId=route_table_id, SubnetId=subnet_id
            )
            return str(resp["AssociationId"])

    def create_subnet_cidr_reservation(
        self,
        subnet_id: str,
        cidr: str,
        description: str,
        *,
        reservation_type: str = "prefix",
        tags: Mapping[str, str] | None = None,
    ) -> Json:
        """Reserve `cidr` in the subnet; type "prefix" keeps it for /28 prefix assignment only."""
        with _aws("ec2:CreateSubnetCidrReservation", f"subnet {subnet_id}"):
            resp = self._call(
                self._ec2.create_subnet_cidr_reservation,
                write=True,
                SubnetId=subnet_id,
                Cidr=cidr,
                ReservationType=reservation_type,
                Description=description,
                TagSpecifications=_tag_spec("subnet-cidr-reservation", tags or {}),
            )
            return dict(resp["SubnetCidrReservation"])

    def update_addon_configuration(
        self, cluster: str, addon: str, configuration_values: str, *, resolve_conflicts: str = "PRESERVE"
    ) -> str:
        """Start an add-on update that sets configurationValues; returns the update id to poll.

        PRESERVE keeps settings someone changed on the cluster by hand instead of overwriting them.
        """
        with _aws("eks:UpdateAddon", f"add-on {addon!r} of {self._cluster_subject(cluster)}"):
            resp = self._call(
                self._eks.update_addon,
                write=True,
                clusterName=cluster,
                addonName=addon,
                configurationValues=configuration_values,
                resolveConflicts=resolve_conflicts,
            )
            return str(resp["update"]["id"])

    def update_cluster_subnets(self, cluster: str, subnet_ids: Sequence[str], security_group_ids: Sequence[str]) -> str:
        """UpdateClusterConfig with the cluster's whole subnet list (and its security groups, sent with it so
        the VPC config update keeps them); returns the update id to poll with DescribeUpdate."""
        with _aws("eks:UpdateClusterConfig", self._cluster_subject(cluster)):
            resp = self._call(
                self._eks.update_cluster_config,
                write=True,
                name=cluster,
                resourcesVpcConfig={"subnetIds": list(subnet_ids), "securityGroupIds": list(security_group_ids)},
            )
            return str(resp["update"]["id"])

    def describe_update(self, cluster: str, update_id: str, addon: str | None = None) -> Json:
        with _aws("eks:DescribeUpdate", f"update {update_id} of {self._cluster_subject(cluster)}"):
            if addon:
                resp = self._call(self._eks.describe_update, name=cluster, updateId=update_id, addonName=addon)
            else:
                resp = self._call(self._eks.describe_update, name=cluster, updateId=update_id)
            return dict(resp["update"])

    def create_nodegroup(self, **kwargs: Any) -> Json:
        """CreateNodegroup with boto3's own keyword names (clusterName, nodegroupName, subnets, tags...)."""
        subject = (
            f"node group {kwargs.get('nodegroupName')!r} of {self._cluster_subject(str(kwargs.get('clusterName')))}"
        )
        with _aws("eks:CreateNodegroup", subject):
            return dict(self._call(self._eks.create_nodegroup, write=True, **kwargs)["nodegroup"])

    def update_nodegroup_scaling(self, cluster: str, name: str, scaling: Json) -> None:
        """UpdateNodegroupConfig with a new scalingConfig (minSize, maxSize, desiredSize)."""
        with _aws("eks:UpdateNodegroupConfig", f"node group {name!r} of {self._cluster_subject(cluster)}"):
            self._call(
                self._eks.update_nodegroup_config,
                write=True,
                clusterName=cluster,
                nodegroupName=name,
                scalingConfig=dict(scaling),
            )

    # -- writes of `cidrx rollback` (cidrx.providers.eks.actions) ----------------------------------------------

    def delete_nodegroup(self, cluster: str, name: str) -> None:
        with _aws("eks:DeleteNodegroup", f"node group {name!r} of {self._cluster_subject(cluster)}"):
            self._call(self._eks.delete_nodegroup, write=True, clusterName=cluster, nodegroupName=name)

    def disassociate_route_table(self, association_id: str) -> None:
        with _aws("ec2:DisassociateRouteTable", f"route table association {association_id}"):
            self._call(self._ec2.disassociate_route_table, write=True, AssociationId=association_id)

    def delete_subnet(self, subnet_id: str) -> None:
        with _aws("ec2:DeleteSubnet", f"subnet {subnet_id}"):
            self._call(self._ec2.delete_subnet, write=True, SubnetId=subnet_id)

    def disassociate_vpc_cidr(self, association_id: str) -> None:
        with _aws("ec2:DisassociateVpcCidrBlock", f"VPC CIDR association {association_id}"):
            self._call(self._ec2.disassociate_vpc_cidr_block, write=True, AssociationId=association_id)

    def delete_subnet_cidr_reservation(self, reservation_id: str) -> None:
        with _aws("ec2:DeleteSubnetCidrReservation", f"subnet CIDR reservation {reservation_id}"):
            self._call(self._ec2.delete_subnet_cidr_reservation, write=True, SubnetCidrReservationId=reservation_id)

    # -- node provisioners (cidrx.providers.eks.collect.provisioners) ---------------------------------

    def describe_auto_scaling_groups(self, *, tag_key: str = "", names: Sequence[str] = ()) -> list[Json]:
        """Auto Scaling groups carrying the tag key `tag_key`, or those named `names`."""
        kwargs: dict[str, Any] = {}
        if tag_key:
            kwargs["Filters"] = [{"Name": "tag-key", "Values": [tag_key]}]
        elif names:
            kwargs["AutoScalingGroupNames"] = list(names)
        else:
            return []
        with _aws("autoscaling:DescribeAutoScalingGroups", f"Auto Scaling groups in {self.region}"):
            return self._pages(self._client("autoscaling").describe_auto_scaling_groups, "AutoScalingGroups", **kwargs)

    def auto_scaling_groups_of(self, instance_ids: Sequence[str]) -> dict[str, str]:
        """{instance id: Auto Scaling group name} of those instances that belong to a group."""
        found: dict[str, str] = {}
        ids = sorted(set(instance_ids))
        with _aws("autoscaling:DescribeAutoScalingInstances", f"instances in {self.region}"):
            for start in range(0, len(ids), 50):  # the API takes at most 50 ids per request
                for item in self._pages(
                    self._client("autoscaling").describe_auto_scaling_instances,
                    "AutoScalingInstances",
                    InstanceIds=ids[start : start + 50],
                ):
                    found[str(item["InstanceId"])] = str(item["AutoScalingGroupName"])
        return found

    def instance_private_ips(
        self, vpc_id: str, *, instance_ids: Sequence[str] = (), private_ips: Sequence[str] = ()
    ) -> dict[str, str]:
        """{instance id: primary private IPv4} of the VPC's instances with those ids, or those addresses."""
        name, values = ("instance-id", instance_ids) if instance_ids else ("private-ip-address", private_ips)
        wanted = sorted(set(values))
        found: dict[str, str] = {}
        with _aws("ec2:DescribeInstances", f"instances in VPC {vpc_id}"):
            for start in range(0, len(wanted), 200):  # at most 200 values per filter
                filters: list[Any] = [*_vpc_filter(vpc_id), {"Name": name, "Values": wanted[start : start + 200]}]
                for r in self._pages(self._ec2.describe_instances, "Reservations", Filters=filters):
                    for i in r.get("Instances") or ():
                        if i.get("InstanceId") and i.get("PrivateIpAddress"):
                            found[str(i["InstanceId"])] = str(i["PrivateIpAddress"])
        return found

    def describe_launch_template_version(self, template: Mapping[str, str]) -> Json | None:
        """The launch template version an Auto Scaling group names (id or name, version or $Default)."""
        kwargs: dict[str, Any] = {"Versions": [template.get("version") or "$Default"]}
        if template.get("id"):
            kwargs["LaunchTemplateId"] = template["id"]
        elif template.get("name"):
            kwargs["LaunchTemplateName"] = template["name"]
        else:
            return None
        subject = f"launch template {template.get('id') or template.get('name')}"
        with _aws("ec2:DescribeLaunchTemplateVersions", subject):
            versions = self._pages(self._ec2.describe_launch_template_versions, "LaunchTemplateVersions", **kwargs)
        return versions[0] if versions else None

    def launch_template_versions(self, template_id: str, versions: Sequence[str] = ()) -> list[Json]:
        """Versions of a launch template (all of them, or those named: numbers, $Latest, $Default)."""
        kwargs: dict[str, Any] = {"LaunchTemplateId": template_id}
        if versions:
            kwargs["Versions"] = list(versions)
        with _aws("ec2:DescribeLaunchTemplateVersions", f"launch template {template_id}"):
            return self._pages(self._ec2.describe_launch_template_versions, "LaunchTemplateVersions", **kwargs)

    def create_launch_template_version(
        self, template_id: str, source_version: str, description: str, data: Mapping[str, Any]
    ) -> Json:
        """A new version of the template: `source_version` with `data` laid over it."""
        with _aws("ec2:CreateLaunchTemplateVersion", f"launch template {template_id}"):
            resp = self._call(
                self._ec2.create_launch_template_version,
                write=True,
                LaunchTemplateId=template_id,
                SourceVersion=source_version,
                VersionDescription=description,
                LaunchTemplateData=dict(data),
            )
            return dict(resp["LaunchTemplateVersion"])

    def delete_launch_template_version(self, template_id: str, version: str) -> None:
        """Delete one version of a launch template (already gone counts as done). EC2 answers a version it could
        not delete in the response, not as an error (DeleteLaunchTemplateVersions, EC2 API reference)."""
        with _aws("ec2:DeleteLaunchTemplateVersions", f"launch template {template_id}"):
            resp = self._call(
                self._ec2.delete_launch_template_versions,
                write=True,
                LaunchTemplateId=template_id,
                Versions=[version],
            )
        for failed in resp.get("UnsuccessfullyDeletedLaunchTemplateVersions") or ():
            error = failed.get("ResponseError") or {}
            if error.get("Code") != "launchTemplateVersionDoesNotExist":
                raise CloudError(
                    f"launch template {template_id} v{version} was not deleted: {error.get('Message') or error}"
                )

    def set_group_size(self, group: str, size: Mapping[str, int]) -> None:
        """Set an Auto Scaling group's MinSize, MaxSize and DesiredCapacity (`size` in the node group shape:
        minSize, maxSize, desiredSize). The group terminates instances beyond the new desired capacity itself."""
        with _aws("autoscaling:UpdateAutoScalingGroup", f"Auto Scaling group {group}"):
            self._call(
                self._client("autoscaling").update_auto_scaling_group,
                write=True,
                AutoScalingGroupName=group,
                MinSize=int(size["minSize"]),
                MaxSize=int(size["maxSize"]),
                DesiredCapacity=int(size["desiredSize"]),
            )

    def group_size(self, group: str) -> dict[str, int] | None:
        """An Auto Scaling group's size as minSize, maxSize, desiredSize; None when the group is gone."""
        found = self.describe_auto_scaling_groups(names=[group])
        if not found:
            return None
        g = found[0]
        return {
            "minSize": int(g.get("MinSize", 0)),
            "maxSize": int(g.get("MaxSize", 0)),
            "desiredSize": int(g.get("DesiredCapacity", 0)),
        }

    def set_group_launch_template(self, group: str, template_id: str, version: str) -> None:
        """Point an Auto Scaling group at a launch template version (new instances use it)."""
        with _aws("autoscaling:UpdateAutoScalingGroup", f"Auto Scaling group {group}"):
            self._call(
                self._client("autoscaling").update_auto_scaling_group,
                write=True,
                AutoScalingGroupName=group,
                LaunchTemplate={"LaunchTemplateId": template_id, "Version": version},
            )
