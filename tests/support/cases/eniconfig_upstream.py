"""The AWS VPC CNI's own ENIConfig-selection test table, replayed as cidrx cases.

Source: aws/amazon-vpc-cni-k8s pkg/eniconfig/eniconfig_test.go @ b52188387f2e2f10bf289ace929d6a63b176a4fa,
TestMyENIConfig. Upstream sets ENI_CONFIG_LABEL_DEF / ENI_CONFIG_ANNOTATION_DEF with os.Setenv and never unsets
them, so a case runs with the variables earlier cases left behind; each case here spells out the environment it
really ran with (`label_def`, `annotation_def`). `want` is the ENIConfig MyENIConfig returns, or None for
ErrNoENIConfig ("eniconfig: eniconfig is not available"). Upstream's ENIConfigs: az1 (SG1, SB1), az2 (SG2, SB2)
and custom (SG1, SB1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

ZONE = "topology.kubernetes.io/zone"
DEFAULT_KEY = "k8s.amazonaws.com/eniConfig"
EXTERNAL = "vpc.amazonaws.com/externalEniConfig"
MY_ANNOTATION = "k8s.amazonaws.com/myENIConfig"


@dataclass(frozen=True)
class UpstreamCase:
    name: str
    eniconfigs: tuple[str, ...]
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    label_def: str = ""
    annotation_def: str = ""
    want: str | None = None


CASES = (
    UpstreamCase(
        "Matching ENIConfig available - Using Default Labels", ("az1",), labels={DEFAULT_KEY: "az1"}, want="az1"
    ),
    UpstreamCase("No Matching ENIConfig available - Using Default Labels", ("az2",), labels={DEFAULT_KEY: "az1"}),
    UpstreamCase(
        "Matching ENIConfig available - Using Custom Label Key exposed via ENI_CONFIG_LABEL_DEF",
        ("az1",),
        labels={ZONE: "az1"},
        label_def=ZONE,
        want="az1",
    ),
    UpstreamCase(
        "No Matching ENIConfig available - Using Custom Label Key exposed via ENI_CONFIG_LABEL_DEF",
        ("az1",),
        labels={ZONE: "az2"},
        label_def=ZONE,
    ),
    # From here on ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone is still set (left by the case above).
    UpstreamCase(
        "Matching ENIConfig available - Using Default Annotation",
        ("az1",),
        labels={ZONE: "az2"},
        annotations={DEFAULT_KEY: "az1"},
        label_def=ZONE,
        want="az1",
    ),
    UpstreamCase(
        "No Matching ENIConfig available - Using Default Annotation",
        ("az2",),
        labels={ZONE: "az2"},
        annotations={DEFAULT_KEY: "az1"},
        label_def=ZONE,
    ),
    UpstreamCase(
        "Matching ENIConfig available - Using Custom Annotation Key exposed via ENI_CONFIG_ANNOTATION_DEF",
        ("az1",),
        labels={ZONE: "az2"},
        annotations={MY_ANNOTATION: "az1"},
        label_def=ZONE,
        annotation_def=MY_ANNOTATION,
        want="az1",
    ),
    UpstreamCase(
        "Matching ENIConfig available - Using external label",
        ("az1", "custom"),
        labels={EXTERNAL: "custom", ZONE: "az2"},
        label_def=ZONE,
        annotation_def=MY_ANNOTATION,
        want="custom",
    ),
    UpstreamCase(
        "No Matching ENIConfig available - Using Custom Label Key exposed via ENI_CONFIG_ANNOTATION_DEF",
        ("az2",),
        labels={ZONE: "az2"},
        annotations={MY_ANNOTATION: "az1"},
        label_def=ZONE,
        annotation_def=MY_ANNOTATION,
    ),
)
