"""Off a terminal without -v, reading prints nothing but one line for each request still pending after 10 s,
naming that request (not the client being built for it). A fake clock: nothing sleeps."""

from __future__ import annotations

import io

import pytest

from cidrx.render.progress import SlowWaitLines


def test_one_line_per_wait_over_ten_seconds_naming_the_request() -> None:
    now = [0.0]
    out = io.StringIO()
    lines = SlowWaitLines(out, monotonic=lambda: now[0])
    lines.reading("eks:DescribeCluster EKS cluster 'demo' in us-east-1")
    now[0] = 9.0
    lines.tick()
    assert out.getvalue() == ""
    now[0] = 12.0
    lines.tick()
    now[0] = 40.0
    lines.tick()  # the same wait is told once
    assert (
        out.getvalue() == "cidrx: still waiting for eks:DescribeCluster EKS cluster 'demo' in us-east-1 (12s so far)\n"
    )
    lines.reading("ec2:DescribeSubnets VPC vpc-1")  # fast: never told
    now[0] = 41.0
    lines.tick()
    lines.retrying("ec2:DescribeSubnets VPC vpc-1", 2, 6, 20.0, "HTTP 503")
    now[0] = 52.0
    lines.tick()
    assert out.getvalue().splitlines()[1] == (
        "cidrx: still waiting for ec2:DescribeSubnets VPC vpc-1 (retry 2 of 6 after: HTTP 503) (11s so far)"
    )


def test_the_activity_names_the_request_not_the_client_built_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from cidrx.providers.eks.api import EksApi
    from cidrx.transport import activity
    from tests.support.estates.eks import fake_aws_env, moto_incident

    fake_aws_env(monkeypatch)
    seen: list[str] = []

    class Recorder:
        def reading(self, what: str) -> None:
            seen.append(what)

        def retrying(self, what: str, attempt: int, max_attempts: int, delay: float, error: str) -> None:
            seen.append(f"retry {what}")

    with moto_incident() as (session, world), activity.listening(Recorder()):
        EksApi(session.region_name, session=session).describe_cluster(world.cluster)
    assert seen and seen[-1].startswith("eks:DescribeCluster")
    assert not [s for s in seen if "creating the" in s]
