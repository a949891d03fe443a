"""Upstream's max-pods and warm-pool tables, replayed as cidrx cases (numbers only; the files are not copied).

Sources (docs/cloud-facts.md, "EKS max pods and warm pools"):
- aws/amazon-vpc-cni-k8s misc/eni-max-pods.txt @ b52188387f2e2f10bf289ace929d6a63b176a4fa (last changed in
  6152e01c83bb8f04fdc8690e99134ebe1445db29): `ENI_MAX_PODS` holds its rows for the 1,368 instance types moto's
  DescribeInstanceTypes data also knows (23 of its 1,391 rows name types moto does not have).
- awslabs/amazon-eks-ami templates/al2/runtime/max-pods-calculator.sh as last shipped (parent of
  b22890309b36fc112b7ddb05668b6e1541faccbc, which removed AL2): `CALCULATOR` are its cases, the expected
  figures worked out by hand from the script's arithmetic and the instance types' EC2 figures.
- aws/amazon-vpc-cni-k8s docs/eni-and-ip-target.md and docs/prefix-and-ip-target.md @ b52188387f2e: the rows
  of their example tables (`IP_TARGET_ROWS`, `PREFIX_TARGET_ROWS`).
"""

from __future__ import annotations

from dataclasses import dataclass

# "type=max pods" pairs of eni-max-pods.txt (secondary IPs, no custom networking, no cap).
_ROWS = (
    "a1.2xlarge=58 a1.4xlarge=234 a1.large=29 a1.medium=8 a1.metal=234 a1.xlarge=58 c1.medium=12 c1.xlarge=58 "
    "c3.2xlarge=58 c3.4xlarge=234 c3.8xlarge=234 c3.large=29 c3.xlarge=58 c4.2xlarge=58 c4.4xlarge=234 "
    "c4.8xlarge=234 c4.large=29 c4.xlarge=58 c5.12xlarge=234 c5.18xlarge=737 c5.24xlarge=737 c5.2xlarge=58 "
    "c5.4xlarge=234 c5.9xlarge=234 c5.large=29 c5.metal=737 c5.xlarge=58 c5a.12xlarge=234 c5a.16xlarge=737 "
    "c5a.24xlarge=737 c5a.2xlarge=58 c5a.4xlarge=234 c5a.8xlarge=234 c5a.large=29 c5a.xlarge=58 "
    "c5ad.12xlarge=234 c5ad.16xlarge=737 c5ad.24xlarge=737 c5ad.2xlarge=58 c5ad.4xlarge=234 c5ad.8xlarge=234 "
    "c5ad.large=29 c5ad.xlarge=58 c5d.12xlarge=234 c5d.18xlarge=737 c5d.24xlarge=737 c5d.2xlarge=58 "
    "c5d.4xlarge=234 c5d.9xlarge=234 c5d.large=29 c5d.metal=737 c5d.xlarge=58 c5n.18xlarge=737 c5n.2xlarge=58 "
    "c5n.4xlarge=234 c5n.9xlarge=234 c5n.large=29 c5n.metal=737 c5n.xlarge=58 c6a.12xlarge=234 "
    "c6a.16xlarge=737 c6a.24xlarge=737 c6a.2xlarge=58 c6a.32xlarge=737 c6a.48xlarge=737 c6a.4xlarge=234 "
    "c6a.8xlarge=234 c6a.large=29 c6a.metal=737 c6a.xlarge=58 c6g.12xlarge=234 c6g.16xlarge=737 "
    "c6g.2xlarge=58 c6g.4xlarge=234 c6g.8xlarge=234 c6g.large=29 c6g.medium=8 c6g.metal=737 c6g.xlarge=58 "
    "c6gd.12xlarge=234 c6gd.16xlarge=737 c6gd.2xlarge=58 c6gd.4xlarge=234 c6gd.8xlarge=234 c6gd.large=29 "
    "c6gd.medium=8 c6gd.metal=737 c6gd.xlarge=58 c6gn.12xlarge=234 c6gn.16xlarge=737 c6gn.2xlarge=58 "
    "c6gn.4xlarge=234 c6gn.8xlarge=234 c6gn.large=29 c6gn.medium=8 c6gn.xlarge=58 c6i.12xlarge=234 "
    "c6i.16xlarge=737 c6i.24xlarge=737 c6i.2xlarge=58 c6i.32xlarge=737 c6i.4xlarge=234 c6i.8xlarge=234 "
    "c6i.large=29 c6i.metal=737 c6i.xlarge=58 c6id.12xlarge=234 c6id.16xlarge=737 c6id.24xlarge=737 "
    "c6id.2xlarge=58 c6id.32xlarge=737 c6id.4xlarge=234 c6id.8xlarge=234 c6id.large=29 c6id.metal=737 "
    "c6id.xlarge=58 c6in.12xlarge=234 c6in.16xlarge=737 c6in.24xlarge=737 c6in.2xlarge=58 c6in.32xlarge=394 "
    "c6in.4xlarge=234 c6in.8xlarge=234 c6in.large=29 c6in.metal=394 c6in.xlarge=58 c7a.12xlarge=234 "
    "c7a.16xlarge=737 c7a.24xlarge=737 c7a.2xlarge=58 c7a.32xlarge=737 c7a.48xlarge=737 c7a.4xlarge=234 "
    "c7a.8xlarge=234 c7a.large=29 c7a.medium=8 c7a.metal-48xl=737 c7a.xlarge=58 c7g.12xlarge=234 "
    "c7g.16xlarge=737 c7g.2xlarge=58 c7g.4xlarge=234 c7g.8xlarge=234 c7g.large=29 c7g.medium=8 c7g.metal=737 "
    "c7g.xlarge=58 c7gd.12xlarge=234 c7gd.16xlarge=737 c7gd.2xlarge=58 c7gd.4xlarge=234 c7gd.8xlarge=234 "
    "c7gd.large=29 c7gd.medium=8 c7gd.metal=737 c7gd.xlarge=58 c7gn.12xlarge=234 c7gn.16xlarge=737 "
    "c7gn.2xlarge=58 c7gn.4xlarge=234 c7gn.8xlarge=234 c7gn.large=29 c7gn.medium=8 c7gn.metal=737 "
    "c7gn.xlarge=58 c7i-flex.12xlarge=234 c7i-flex.16xlarge=737 c7i-flex.2xlarge=58 c7i-flex.4xlarge=234 "
    "c7i-flex.8xlarge=234 c7i-flex.large=29 c7i-flex.xlarge=58 c7i.12xlarge=234 c7i.16xlarge=737 "
    "c7i.24xlarge=737 c7i.2xlarge=58 c7i.48xlarge=737 c7i.4xlarge=234 c7i.8xlarge=234 c7i.large=29 "
    "c7i.metal-24xl=737 c7i.metal-48xl=737 c7i.xlarge=58 c8a.12xlarge=758 c8a.16xlarge=1010 c8a.24xlarge=1010 "
    "c8a.2xlarge=158 c8a.48xlarge=1514 c8a.4xlarge=314 c8a.8xlarge=392 c8a.large=59 c8a.medium=8 "
    "c8a.metal-24xl=1010 c8a.metal-48xl=1514 c8a.xlarge=78 c8g.12xlarge=234 c8g.16xlarge=737 c8g.24xlarge=737 "
    "c8g.2xlarge=58 c8g.48xlarge=737 c8g.4xlarge=234 c8g.8xlarge=234 c8g.large=29 c8g.medium=8 "
    "c8g.metal-24xl=737 c8g.metal-48xl=737 c8g.xlarge=58 c8gb.12xlarge=350 c8gb.16xlarge=786 "
    "c8gb.24xlarge=1178 c8gb.2xlarge=58 c8gb.48xlarge=590 c8gb.4xlarge=234 c8gb.8xlarge=292 c8gb.large=29 "
    "c8gb.medium=8 c8gb.metal-24xl=1178 c8gb.metal-48xl=590 c8gb.xlarge=58 c8gd.12xlarge=234 "
    "c8gd.16xlarge=737 c8gd.24xlarge=737 c8gd.2xlarge=58 c8gd.48xlarge=737 c8gd.4xlarge=234 c8gd.8xlarge=234 "
    "c8gd.large=29 c8gd.medium=8 c8gd.metal-24xl=737 c8gd.metal-48xl=737 c8gd.xlarge=58 c8gn.12xlarge=350 "
    "c8gn.16xlarge=786 c8gn.24xlarge=1178 c8gn.2xlarge=58 c8gn.48xlarge=590 c8gn.4xlarge=234 c8gn.8xlarge=292 "
    "c8gn.large=29 c8gn.medium=8 c8gn.metal-24xl=1178 c8gn.metal-48xl=590 c8gn.xlarge=58 "
    "c8i-flex.12xlarge=590 c8i-flex.16xlarge=1010 c8i-flex.2xlarge=118 c8i-flex.4xlarge=394 "
    "c8i-flex.8xlarge=492 c8i-flex.large=59 c8i-flex.xlarge=118 c8i.12xlarge=590 c8i.16xlarge=1010 "
    "c8i.24xlarge=1010 c8i.2xlarge=118 c8i.32xlarge=1514 c8i.48xlarge=1514 c8i.4xlarge=394 c8i.8xlarge=492 "
    "c8i.96xlarge=1514 c8i.large=59 c8i.metal-48xl=1514 c8i.metal-96xl=1514 c8i.xlarge=118 c8ib.12xlarge=590 "
    "c8ib.16xlarge=1010 c8ib.24xlarge=1010 c8ib.2xlarge=118 c8ib.32xlarge=1010 c8ib.48xlarge=1514 "
    "c8ib.4xlarge=394 c8ib.8xlarge=394 c8ib.96xlarge=758 c8ib.large=78 c8ib.metal-48xl=1514 "
    "c8ib.metal-96xl=758 c8ib.xlarge=118 c8id.12xlarge=590 c8id.16xlarge=1010 c8id.24xlarge=1010 "
    "c8id.2xlarge=118 c8id.32xlarge=1514 c8id.48xlarge=1514 c8id.4xlarge=394 c8id.8xlarge=492 "
    "c8id.96xlarge=1514 c8id.large=59 c8id.metal-48xl=1514 c8id.metal-96xl=1514 c8id.xlarge=118 "
    "c8in.12xlarge=590 c8in.16xlarge=1010 c8in.24xlarge=1010 c8in.2xlarge=118 c8in.32xlarge=1010 "
    "c8in.48xlarge=1514 c8in.4xlarge=394 c8in.8xlarge=394 c8in.96xlarge=758 c8in.large=78 "
    "c8in.metal-48xl=1514 c8in.metal-96xl=758 c8in.xlarge=118 c8ine.12xlarge=590 c8ine.2xlarge=118 "
    "c8ine.4xlarge=394 c8ine.8xlarge=394 c8ine.large=78 c8ine.xlarge=118 c9g.12xlarge=590 c9g.16xlarge=1010 "
    "c9g.24xlarge=1514 c9g.2xlarge=118 c9g.48xlarge=1514 c9g.4xlarge=394 c9g.8xlarge=492 c9g.large=59 "
    "c9g.medium=40 c9g.metal-48xl=1514 c9g.xlarge=118 c9gd.12xlarge=590 c9gd.16xlarge=1010 c9gd.24xlarge=1514 "
    "c9gd.2xlarge=118 c9gd.48xlarge=1514 c9gd.4xlarge=394 c9gd.8xlarge=492 c9gd.large=59 c9gd.medium=40 "
    "c9gd.metal-48xl=1514 c9gd.xlarge=118 d2.2xlarge=58 d2.4xlarge=234 d2.8xlarge=234 d2.xlarge=58 "
    "d3.2xlarge=18 d3.4xlarge=38 d3.8xlarge=59 d3.xlarge=10 d3en.12xlarge=89 d3en.2xlarge=18 d3en.4xlarge=38 "
    "d3en.6xlarge=58 d3en.8xlarge=78 d3en.xlarge=10 dl2q.24xlarge=737 f2.12xlarge=234 f2.48xlarge=737 "
    "f2.6xlarge=234 g4dn.12xlarge=234 g4dn.16xlarge=58 g4dn.2xlarge=29 g4dn.4xlarge=29 g4dn.8xlarge=58 "
    "g4dn.metal=737 g4dn.xlarge=29 g5.12xlarge=737 g5.16xlarge=234 g5.24xlarge=737 g5.2xlarge=58 "
    "g5.48xlarge=345 g5.4xlarge=234 g5.8xlarge=234 g5.xlarge=58 g5g.16xlarge=737 g5g.2xlarge=58 "
    "g5g.4xlarge=234 g5g.8xlarge=234 g5g.metal=737 g5g.xlarge=58 g6.12xlarge=234 g6.16xlarge=737 "
    "g6.24xlarge=737 g6.2xlarge=58 g6.48xlarge=737 g6.4xlarge=234 g6.8xlarge=234 g6.xlarge=58 "
    "g6e.12xlarge=292 g6e.16xlarge=737 g6e.24xlarge=492 g6e.2xlarge=58 g6e.48xlarge=492 g6e.4xlarge=234 "
    "g6e.8xlarge=234 g6e.xlarge=58 g6f.2xlarge=58 g6f.4xlarge=234 g6f.large=20 g6f.xlarge=58 g7.12xlarge=758 "
    "g7.24xlarge=1514 g7.2xlarge=254 g7.48xlarge=758 g7.4xlarge=506 g7.8xlarge=632 g7e.12xlarge=632 "
    "g7e.24xlarge=632 g7e.2xlarge=254 g7e.48xlarge=632 g7e.4xlarge=506 g7e.8xlarge=506 gr6.4xlarge=234 "
    "gr6.8xlarge=234 gr6f.4xlarge=234 h1.16xlarge=394 h1.2xlarge=58 h1.4xlarge=234 h1.8xlarge=234 "
    "hpc6a.48xlarge=100 hpc6id.32xlarge=51 hpc7a.12xlarge=100 hpc7a.24xlarge=100 hpc7a.48xlarge=100 "
    "hpc7a.96xlarge=100 hpc7g.16xlarge=198 hpc7g.4xlarge=198 hpc7g.8xlarge=198 hpc8a.96xlarge=100 "
    "i2.2xlarge=58 i2.4xlarge=234 i2.8xlarge=234 i2.xlarge=58 i3.16xlarge=737 i3.2xlarge=58 i3.4xlarge=234 "
    "i3.8xlarge=234 i3.large=29 i3.xlarge=58 i3en.12xlarge=234 i3en.24xlarge=737 i3en.2xlarge=58 "
    "i3en.3xlarge=58 i3en.6xlarge=234 i3en.large=29 i3en.metal=737 i3en.xlarge=58 i4g.16xlarge=737 "
    "i4g.2xlarge=58 i4g.4xlarge=234 i4g.8xlarge=234 i4g.large=29 i4g.xlarge=58 i4i.12xlarge=234 "
    "i4i.16xlarge=737 i4i.24xlarge=437 i4i.2xlarge=58 i4i.32xlarge=737 i4i.4xlarge=234 i4i.8xlarge=234 "
    "i4i.large=29 i4i.metal=737 i4i.xlarge=58 i7i.12xlarge=234 i7i.16xlarge=737 i7i.24xlarge=737 "
    "i7i.2xlarge=58 i7i.48xlarge=737 i7i.4xlarge=234 i7i.8xlarge=234 i7i.large=29 i7i.metal-24xl=737 "
    "i7i.metal-48xl=737 i7i.xlarge=58 i7ie.12xlarge=394 i7ie.18xlarge=737 i7ie.24xlarge=737 i7ie.2xlarge=58 "
    "i7ie.3xlarge=58 i7ie.48xlarge=737 i7ie.6xlarge=234 i7ie.large=29 i7ie.metal-24xl=737 i7ie.metal-48xl=737 "
    "i7ie.xlarge=58 i8g.12xlarge=234 i8g.16xlarge=737 i8g.24xlarge=737 i8g.2xlarge=58 i8g.48xlarge=737 "
    "i8g.4xlarge=234 i8g.8xlarge=234 i8g.large=29 i8g.metal-24xl=737 i8g.metal-48xl=737 i8g.xlarge=58 "
    "i8ge.12xlarge=350 i8ge.18xlarge=786 i8ge.24xlarge=786 i8ge.2xlarge=58 i8ge.3xlarge=176 "
    "i8ge.48xlarge=1178 i8ge.6xlarge=292 i8ge.large=29 i8ge.metal-24xl=786 i8ge.metal-48xl=1178 "
    "i8ge.xlarge=58 im4gn.16xlarge=737 im4gn.2xlarge=58 im4gn.4xlarge=234 im4gn.8xlarge=234 im4gn.large=29 "
    "im4gn.xlarge=58 inf1.24xlarge=321 inf1.2xlarge=38 inf1.6xlarge=234 inf1.xlarge=38 inf2.24xlarge=737 "
    "inf2.48xlarge=737 inf2.8xlarge=234 inf2.xlarge=58 is4gen.2xlarge=58 is4gen.4xlarge=234 "
    "is4gen.8xlarge=234 is4gen.large=29 is4gen.medium=8 is4gen.xlarge=58 m1.large=29 m1.medium=12 m1.small=8 "
    "m1.xlarge=58 m2.2xlarge=118 m2.4xlarge=234 m2.xlarge=58 m3.2xlarge=118 m3.large=29 m3.medium=12 "
    "m3.xlarge=58 m4.10xlarge=234 m4.16xlarge=234 m4.2xlarge=58 m4.4xlarge=234 m4.large=20 m4.xlarge=58 "
    "m5.12xlarge=234 m5.16xlarge=737 m5.24xlarge=737 m5.2xlarge=58 m5.4xlarge=234 m5.8xlarge=234 m5.large=29 "
    "m5.metal=737 m5.xlarge=58 m5a.12xlarge=234 m5a.16xlarge=737 m5a.24xlarge=737 m5a.2xlarge=58 "
    "m5a.4xlarge=234 m5a.8xlarge=234 m5a.large=29 m5a.xlarge=58 m5ad.12xlarge=234 m5ad.16xlarge=737 "
    "m5ad.24xlarge=737 m5ad.2xlarge=58 m5ad.4xlarge=234 m5ad.8xlarge=234 m5ad.large=29 m5ad.xlarge=58 "
    "m5d.12xlarge=234 m5d.16xlarge=737 m5d.24xlarge=737 m5d.2xlarge=58 m5d.4xlarge=234 m5d.8xlarge=234 "
    "m5d.large=29 m5d.metal=737 m5d.xlarge=58 m5dn.12xlarge=234 m5dn.16xlarge=737 m5dn.24xlarge=737 "
    "m5dn.2xlarge=58 m5dn.4xlarge=234 m5dn.8xlarge=234 m5dn.large=29 m5dn.metal=737 m5dn.xlarge=58 "
    "m5n.12xlarge=234 m5n.16xlarge=737 m5n.24xlarge=737 m5n.2xlarge=58 m5n.4xlarge=234 m5n.8xlarge=234 "
    "m5n.large=29 m5n.metal=737 m5n.xlarge=58 m5zn.12xlarge=737 m5zn.2xlarge=58 m5zn.3xlarge=234 "
    "m5zn.6xlarge=234 m5zn.large=29 m5zn.metal=737 m5zn.xlarge=58 m6a.12xlarge=234 m6a.16xlarge=737 "
    "m6a.24xlarge=737 m6a.2xlarge=58 m6a.32xlarge=737 m6a.48xlarge=737 m6a.4xlarge=234 m6a.8xlarge=234 "
    "m6a.large=29 m6a.metal=737 m6a.xlarge=58 m6g.12xlarge=234 m6g.16xlarge=737 m6g.2xlarge=58 "
    "m6g.4xlarge=234 m6g.8xlarge=234 m6g.large=29 m6g.medium=8 m6g.metal=737 m6g.xlarge=58 m6gd.12xlarge=234 "
    "m6gd.16xlarge=737 m6gd.2xlarge=58 m6gd.4xlarge=234 m6gd.8xlarge=234 m6gd.large=29 m6gd.medium=8 "
    "m6gd.metal=737 m6gd.xlarge=58 m6i.12xlarge=234 m6i.16xlarge=737 m6i.24xlarge=737 m6i.2xlarge=58 "
    "m6i.32xlarge=737 m6i.4xlarge=234 m6i.8xlarge=234 m6i.large=29 m6i.metal=737 m6i.xlarge=58 "
    "m6id.12xlarge=234 m6id.16xlarge=737 m6id.24xlarge=737 m6id.2xlarge=58 m6id.32xlarge=737 m6id.4xlarge=234 "
    "m6id.8xlarge=234 m6id.large=29 m6id.metal=737 m6id.xlarge=58 m6idn.12xlarge=234 m6idn.16xlarge=737 "
    "m6idn.24xlarge=737 m6idn.2xlarge=58 m6idn.32xlarge=394 m6idn.4xlarge=234 m6idn.8xlarge=234 "
    "m6idn.large=29 m6idn.metal=394 m6idn.xlarge=58 m6in.12xlarge=234 m6in.16xlarge=737 m6in.24xlarge=737 "
    "m6in.2xlarge=58 m6in.32xlarge=394 m6in.4xlarge=234 m6in.8xlarge=234 m6in.large=29 m6in.metal=394 "
    "m6in.xlarge=58 m7a.12xlarge=234 m7a.16xlarge=737 m7a.24xlarge=737 m7a.2xlarge=58 m7a.32xlarge=737 "
    "m7a.48xlarge=737 m7a.4xlarge=234 m7a.8xlarge=234 m7a.large=29 m7a.medium=8 m7a.metal-48xl=737 "
    "m7a.xlarge=58 m7g.12xlarge=234 m7g.16xlarge=737 m7g.2xlarge=58 m7g.4xlarge=234 m7g.8xlarge=234 "
    "m7g.large=29 m7g.medium=8 m7g.metal=737 m7g.xlarge=58 m7gd.12xlarge=234 m7gd.16xlarge=737 "
    "m7gd.2xlarge=58 m7gd.4xlarge=234 m7gd.8xlarge=234 m7gd.large=29 m7gd.medium=8 m7gd.metal=737 "
    "m7gd.xlarge=58 m7i-flex.12xlarge=234 m7i-flex.16xlarge=737 m7i-flex.2xlarge=58 m7i-flex.4xlarge=234 "
    "m7i-flex.8xlarge=234 m7i-flex.large=29 m7i-flex.xlarge=58 m7i.12xlarge=234 m7i.16xlarge=737 "
    "m7i.24xlarge=737 m7i.2xlarge=58 m7i.48xlarge=737 m7i.4xlarge=234 m7i.8xlarge=234 m7i.large=29 "
    "m7i.metal-24xl=737 m7i.metal-48xl=737 m7i.xlarge=58 m8a.12xlarge=758 m8a.16xlarge=1010 m8a.24xlarge=1010 "
    "m8a.2xlarge=158 m8a.48xlarge=1514 m8a.4xlarge=314 m8a.8xlarge=392 m8a.large=59 m8a.medium=8 "
    "m8a.metal-24xl=1010 m8a.metal-48xl=1514 m8a.xlarge=78 m8azn.12xlarge=1010 m8azn.24xlarge=1010 "
    "m8azn.3xlarge=314 m8azn.6xlarge=314 m8azn.large=78 m8azn.medium=11 m8azn.metal-12xl=1010 "
    "m8azn.metal-24xl=1010 m8azn.xlarge=78 m8g.12xlarge=234 m8g.16xlarge=737 m8g.24xlarge=737 m8g.2xlarge=58 "
    "m8g.48xlarge=737 m8g.4xlarge=234 m8g.8xlarge=234 m8g.large=29 m8g.medium=8 m8g.metal-24xl=737 "
    "m8g.metal-48xl=737 m8g.xlarge=58 m8gb.12xlarge=350 m8gb.16xlarge=786 m8gb.24xlarge=1178 m8gb.2xlarge=58 "
    "m8gb.48xlarge=590 m8gb.4xlarge=234 m8gb.8xlarge=292 m8gb.large=29 m8gb.medium=8 m8gb.metal-24xl=1178 "
    "m8gb.metal-48xl=590 m8gb.xlarge=58 m8gd.12xlarge=234 m8gd.16xlarge=737 m8gd.24xlarge=737 m8gd.2xlarge=58 "
    "m8gd.48xlarge=737 m8gd.4xlarge=234 m8gd.8xlarge=234 m8gd.large=29 m8gd.medium=8 m8gd.metal-24xl=737 "
    "m8gd.metal-48xl=737 m8gd.xlarge=58 m8gn.12xlarge=350 m8gn.16xlarge=786 m8gn.24xlarge=1178 "
    "m8gn.2xlarge=58 m8gn.48xlarge=590 m8gn.4xlarge=234 m8gn.8xlarge=292 m8gn.large=29 m8gn.medium=8 "
    "m8gn.metal-24xl=1178 m8gn.metal-48xl=590 m8gn.xlarge=58 m8i-flex.12xlarge=590 m8i-flex.16xlarge=1010 "
    "m8i-flex.2xlarge=118 m8i-flex.4xlarge=394 m8i-flex.8xlarge=492 m8i-flex.large=59 m8i-flex.xlarge=118 "
    "m8i.12xlarge=590 m8i.16xlarge=1010 m8i.24xlarge=1010 m8i.2xlarge=118 m8i.32xlarge=1514 m8i.48xlarge=1514 "
    "m8i.4xlarge=394 m8i.8xlarge=492 m8i.96xlarge=1514 m8i.large=59 m8i.metal-48xl=1514 m8i.metal-96xl=1514 "
    "m8i.xlarge=118 m8ib.12xlarge=590 m8ib.16xlarge=1010 m8ib.24xlarge=1010 m8ib.2xlarge=118 "
    "m8ib.32xlarge=1010 m8ib.48xlarge=1514 m8ib.4xlarge=394 m8ib.8xlarge=394 m8ib.96xlarge=758 m8ib.large=78 "
    "m8ib.metal-48xl=1514 m8ib.metal-96xl=758 m8ib.xlarge=118 m8id.12xlarge=590 m8id.16xlarge=1010 "
    "m8id.24xlarge=1010 m8id.2xlarge=118 m8id.32xlarge=1514 m8id.48xlarge=1514 m8id.4xlarge=394 "
    "m8id.8xlarge=492 m8id.96xlarge=1514 m8id.large=59 m8id.metal-48xl=1514 m8id.metal-96xl=1514 "
    "m8id.xlarge=118 m8idb.12xlarge=590 m8idb.16xlarge=1010 m8idb.24xlarge=1010 m8idb.2xlarge=118 "
    "m8idb.32xlarge=1010 m8idb.48xlarge=1514 m8idb.4xlarge=394 m8idb.8xlarge=394 m8idb.96xlarge=758 "
    "m8idb.large=78 m8idb.metal-48xl=1514 m8idb.metal-96xl=758 m8idb.xlarge=118 m8idn.12xlarge=590 "
    "m8idn.16xlarge=1010 m8idn.24xlarge=1010 m8idn.2xlarge=118 m8idn.32xlarge=1010 m8idn.48xlarge=1514 "
    "m8idn.4xlarge=394 m8idn.8xlarge=394 m8idn.96xlarge=758 m8idn.large=78 m8idn.metal-48xl=1514 "
    "m8idn.metal-96xl=758 m8idn.xlarge=118 m8in.12xlarge=590 m8in.16xlarge=1010 m8in.24xlarge=1010 "
    "m8in.2xlarge=118 m8in.32xlarge=1010 m8in.48xlarge=1514 m8in.4xlarge=394 m8in.8xlarge=394 "
    "m8in.96xlarge=758 m8in.large=78 m8in.metal-48xl=1514 m8in.metal-96xl=758 m8in.xlarge=118 "
    "m8ine.12xlarge=590 m8ine.2xlarge=118 m8ine.4xlarge=394 m8ine.8xlarge=394 m8ine.large=78 m8ine.xlarge=118 "
    "m9g.12xlarge=590 m9g.16xlarge=1010 m9g.24xlarge=1514 m9g.2xlarge=118 m9g.48xlarge=1514 m9g.4xlarge=394 "
    "m9g.8xlarge=492 m9g.large=59 m9g.medium=40 m9g.metal-48xl=1514 m9g.xlarge=118 m9gd.12xlarge=590 "
    "m9gd.16xlarge=1010 m9gd.24xlarge=1514 m9gd.2xlarge=118 m9gd.48xlarge=1514 m9gd.4xlarge=394 "
    "m9gd.8xlarge=492 m9gd.large=59 m9gd.medium=40 m9gd.metal-48xl=1514 m9gd.xlarge=118 mac-m3ultra.metal=234 "
    "mac-m4.metal=234 mac-m4max.metal=234 mac-m4pro.metal=234 mac1.metal=234 mac2-m1ultra.metal=234 "
    "mac2-m2.metal=234 mac2-m2pro.metal=234 mac2.metal=234 p3dn.24xlarge=737 p4d.24xlarge=737 "
    "p4de.24xlarge=737 p5.48xlarge=100 p5.4xlarge=118 p5e.48xlarge=100 p5en.48xlarge=198 p6-b200.48xlarge=198 "
    "p6-b300.48xlarge=198 r3.2xlarge=58 r3.4xlarge=234 r3.8xlarge=234 r3.large=29 r3.xlarge=58 "
    "r4.16xlarge=737 r4.2xlarge=58 r4.4xlarge=234 r4.8xlarge=234 r4.large=29 r4.xlarge=58 r5.12xlarge=234 "
    "r5.16xlarge=737 r5.24xlarge=737 r5.2xlarge=58 r5.4xlarge=234 r5.8xlarge=234 r5.large=29 r5.metal=737 "
    "r5.xlarge=58 r5a.12xlarge=234 r5a.16xlarge=737 r5a.24xlarge=737 r5a.2xlarge=58 r5a.4xlarge=234 "
    "r5a.8xlarge=234 r5a.large=29 r5a.xlarge=58 r5ad.12xlarge=234 r5ad.16xlarge=737 r5ad.24xlarge=737 "
    "r5ad.2xlarge=58 r5ad.4xlarge=234 r5ad.8xlarge=234 r5ad.large=29 r5ad.xlarge=58 r5b.12xlarge=234 "
    "r5b.16xlarge=737 r5b.24xlarge=737 r5b.2xlarge=58 r5b.4xlarge=234 r5b.8xlarge=234 r5b.large=29 "
    "r5b.metal=737 r5b.xlarge=58 r5d.12xlarge=234 r5d.16xlarge=737 r5d.24xlarge=737 r5d.2xlarge=58 "
    "r5d.4xlarge=234 r5d.8xlarge=234 r5d.large=29 r5d.metal=737 r5d.xlarge=58 r5dn.12xlarge=234 "
    "r5dn.16xlarge=737 r5dn.24xlarge=737 r5dn.2xlarge=58 r5dn.4xlarge=234 r5dn.8xlarge=234 r5dn.large=29 "
    "r5dn.metal=737 r5dn.xlarge=58 r5n.12xlarge=234 r5n.16xlarge=737 r5n.24xlarge=737 r5n.2xlarge=58 "
    "r5n.4xlarge=234 r5n.8xlarge=234 r5n.large=29 r5n.metal=737 r5n.xlarge=58 r6a.12xlarge=234 "
    "r6a.16xlarge=737 r6a.24xlarge=737 r6a.2xlarge=58 r6a.32xlarge=737 r6a.48xlarge=737 r6a.4xlarge=234 "
    "r6a.8xlarge=234 r6a.large=29 r6a.metal=737 r6a.xlarge=58 r6g.12xlarge=234 r6g.16xlarge=737 "
    "r6g.2xlarge=58 r6g.4xlarge=234 r6g.8xlarge=234 r6g.large=29 r6g.medium=8 r6g.metal=737 r6g.xlarge=58 "
    "r6gd.12xlarge=234 r6gd.16xlarge=737 r6gd.2xlarge=58 r6gd.4xlarge=234 r6gd.8xlarge=234 r6gd.large=29 "
    "r6gd.medium=8 r6gd.metal=737 r6gd.xlarge=58 r6i.12xlarge=234 r6i.16xlarge=737 r6i.24xlarge=737 "
    "r6i.2xlarge=58 r6i.32xlarge=737 r6i.4xlarge=234 r6i.8xlarge=234 r6i.large=29 r6i.metal=737 r6i.xlarge=58 "
    "r6id.12xlarge=234 r6id.16xlarge=737 r6id.24xlarge=737 r6id.2xlarge=58 r6id.32xlarge=737 r6id.4xlarge=234 "
    "r6id.8xlarge=234 r6id.large=29 r6id.metal=737 r6id.xlarge=58 r6idn.12xlarge=234 r6idn.16xlarge=737 "
    "r6idn.24xlarge=737 r6idn.2xlarge=58 r6idn.32xlarge=394 r6idn.4xlarge=234 r6idn.8xlarge=234 "
    "r6idn.large=29 r6idn.metal=394 r6idn.xlarge=58 r6in.12xlarge=234 r6in.16xlarge=737 r6in.24xlarge=737 "
    "r6in.2xlarge=58 r6in.32xlarge=394 r6in.4xlarge=234 r6in.8xlarge=234 r6in.large=29 r6in.metal=394 "
    "r6in.xlarge=58 r7a.12xlarge=234 r7a.16xlarge=737 r7a.24xlarge=737 r7a.2xlarge=58 r7a.32xlarge=737 "
    "r7a.48xlarge=737 r7a.4xlarge=234 r7a.8xlarge=234 r7a.large=29 r7a.medium=8 r7a.metal-48xl=737 "
    "r7a.xlarge=58 r7g.12xlarge=234 r7g.16xlarge=737 r7g.2xlarge=58 r7g.4xlarge=234 r7g.8xlarge=234 "
    "r7g.large=29 r7g.medium=8 r7g.metal=737 r7g.xlarge=58 r7gd.12xlarge=234 r7gd.16xlarge=737 "
    "r7gd.2xlarge=58 r7gd.4xlarge=234 r7gd.8xlarge=234 r7gd.large=29 r7gd.medium=8 r7gd.metal=737 "
    "r7gd.xlarge=58 r7i.12xlarge=234 r7i.16xlarge=737 r7i.24xlarge=737 r7i.2xlarge=58 r7i.48xlarge=737 "
    "r7i.4xlarge=234 r7i.8xlarge=234 r7i.large=29 r7i.metal-24xl=737 r7i.metal-48xl=737 r7i.xlarge=58 "
    "r7iz.12xlarge=234 r7iz.16xlarge=737 r7iz.2xlarge=58 r7iz.32xlarge=737 r7iz.4xlarge=234 r7iz.8xlarge=234 "
    "r7iz.large=29 r7iz.metal-16xl=737 r7iz.metal-32xl=737 r7iz.xlarge=58 r8a.12xlarge=758 r8a.16xlarge=1010 "
    "r8a.24xlarge=1010 r8a.2xlarge=158 r8a.48xlarge=1514 r8a.4xlarge=314 r8a.8xlarge=392 r8a.large=59 "
    "r8a.medium=8 r8a.metal-24xl=1010 r8a.metal-48xl=1514 r8a.xlarge=78 r8g.12xlarge=234 r8g.16xlarge=737 "
    "r8g.24xlarge=737 r8g.2xlarge=58 r8g.48xlarge=737 r8g.4xlarge=234 r8g.8xlarge=234 r8g.large=29 "
    "r8g.medium=8 r8g.metal-24xl=737 r8g.metal-48xl=737 r8g.xlarge=58 r8gb.12xlarge=350 r8gb.16xlarge=786 "
    "r8gb.24xlarge=1178 r8gb.2xlarge=58 r8gb.48xlarge=590 r8gb.4xlarge=234 r8gb.8xlarge=292 r8gb.large=29 "
    "r8gb.medium=8 r8gb.metal-24xl=1178 r8gb.metal-48xl=590 r8gb.xlarge=58 r8gd.12xlarge=234 "
    "r8gd.16xlarge=737 r8gd.24xlarge=737 r8gd.2xlarge=58 r8gd.48xlarge=737 r8gd.4xlarge=234 r8gd.8xlarge=234 "
    "r8gd.large=29 r8gd.medium=8 r8gd.metal-24xl=737 r8gd.metal-48xl=737 r8gd.xlarge=58 r8gn.12xlarge=350 "
    "r8gn.16xlarge=786 r8gn.24xlarge=1178 r8gn.2xlarge=58 r8gn.48xlarge=590 r8gn.4xlarge=234 r8gn.8xlarge=292 "
    "r8gn.large=29 r8gn.medium=8 r8gn.metal-24xl=1178 r8gn.metal-48xl=590 r8gn.xlarge=58 "
    "r8i-flex.12xlarge=590 r8i-flex.16xlarge=1010 r8i-flex.2xlarge=118 r8i-flex.4xlarge=394 "
    "r8i-flex.8xlarge=492 r8i-flex.large=59 r8i-flex.xlarge=118 r8i.12xlarge=590 r8i.16xlarge=1010 "
    "r8i.24xlarge=1010 r8i.2xlarge=118 r8i.32xlarge=1514 r8i.48xlarge=1514 r8i.4xlarge=394 r8i.8xlarge=492 "
    "r8i.96xlarge=1514 r8i.large=59 r8i.metal-48xl=1514 r8i.metal-96xl=1514 r8i.xlarge=118 r8ib.12xlarge=590 "
    "r8ib.16xlarge=1010 r8ib.24xlarge=1010 r8ib.2xlarge=118 r8ib.32xlarge=1010 r8ib.48xlarge=1514 "
    "r8ib.4xlarge=394 r8ib.8xlarge=394 r8ib.96xlarge=758 r8ib.large=78 r8ib.metal-48xl=1514 "
    "r8ib.metal-96xl=758 r8ib.xlarge=118 r8id.12xlarge=590 r8id.16xlarge=1010 r8id.24xlarge=1010 "
    "r8id.2xlarge=118 r8id.32xlarge=1514 r8id.48xlarge=1514 r8id.4xlarge=394 r8id.8xlarge=492 "
    "r8id.96xlarge=1514 r8id.large=59 r8id.metal-48xl=1514 r8id.metal-96xl=1514 r8id.xlarge=118 "
    "r8idb.12xlarge=590 r8idb.16xlarge=1010 r8idb.24xlarge=1010 r8idb.2xlarge=118 r8idb.32xlarge=1010 "
    "r8idb.48xlarge=1514 r8idb.4xlarge=394 r8idb.8xlarge=394 r8idb.96xlarge=758 r8idb.large=78 "
    "r8idb.metal-48xl=1514 r8idb.metal-96xl=758 r8idb.xlarge=118 r8idn.12xlarge=590 r8idn.16xlarge=1010 "
    "r8idn.24xlarge=1010 r8idn.2xlarge=118 r8idn.32xlarge=1010 r8idn.48xlarge=1514 r8idn.4xlarge=394 "
    "r8idn.8xlarge=394 r8idn.96xlarge=758 r8idn.large=78 r8idn.metal-48xl=1514 r8idn.metal-96xl=758 "
    "r8idn.xlarge=118 r8in.12xlarge=590 r8in.16xlarge=1010 r8in.24xlarge=1010 r8in.2xlarge=118 "
    "r8in.32xlarge=1010 r8in.48xlarge=1514 r8in.4xlarge=394 r8in.8xlarge=394 r8in.96xlarge=758 r8in.large=78 "
    "r8in.metal-48xl=1514 r8in.metal-96xl=758 r8in.xlarge=118 t1.micro=4 t2.2xlarge=44 t2.large=35 "
    "t2.medium=17 t2.micro=4 t2.nano=4 t2.small=11 t2.xlarge=44 t3.2xlarge=58 t3.large=35 t3.medium=17 "
    "t3.micro=4 t3.nano=4 t3.small=11 t3.xlarge=58 t3a.2xlarge=58 t3a.large=35 t3a.medium=17 t3a.micro=4 "
    "t3a.nano=4 t3a.small=8 t3a.xlarge=58 t4g.2xlarge=58 t4g.large=35 t4g.medium=17 t4g.micro=4 t4g.nano=4 "
    "t4g.small=11 t4g.xlarge=58 trn1.2xlarge=58 trn1.32xlarge=247 trn1n.32xlarge=247 trn2.3xlarge=30 "
    "trn2.48xlarge=100 u-3tb1.56xlarge=234 u-6tb1.112xlarge=737 u-6tb1.56xlarge=737 u7i-12tb.224xlarge=737 "
    "u7i-6tb.112xlarge=737 u7i-8tb.112xlarge=737 u7in-16tb.224xlarge=394 u7in-24tb.224xlarge=394 "
    "u7in-32tb.224xlarge=394 vt1.24xlarge=737 vt1.3xlarge=58 vt1.6xlarge=234 x1.16xlarge=234 x1.32xlarge=234 "
    "x1e.16xlarge=234 x1e.2xlarge=58 x1e.32xlarge=234 x1e.4xlarge=58 x1e.8xlarge=58 x1e.xlarge=29 "
    "x2gd.12xlarge=234 x2gd.16xlarge=737 x2gd.2xlarge=58 x2gd.4xlarge=234 x2gd.8xlarge=234 x2gd.large=29 "
    "x2gd.medium=8 x2gd.metal=737 x2gd.xlarge=58 x2idn.16xlarge=737 x2idn.24xlarge=737 x2idn.32xlarge=737 "
    "x2idn.metal=737 x2iedn.16xlarge=737 x2iedn.24xlarge=737 x2iedn.2xlarge=58 x2iedn.32xlarge=737 "
    "x2iedn.4xlarge=234 x2iedn.8xlarge=234 x2iedn.metal=737 x2iedn.xlarge=58 x2iezn.12xlarge=737 "
    "x2iezn.2xlarge=58 x2iezn.4xlarge=234 x2iezn.6xlarge=234 x2iezn.8xlarge=234 x2iezn.metal=737 "
    "x8aedz.12xlarge=1010 x8aedz.24xlarge=1010 x8aedz.3xlarge=314 x8aedz.6xlarge=314 x8aedz.large=78 "
    "x8aedz.metal-12xl=1010 x8aedz.metal-24xl=1010 x8aedz.xlarge=78 x8g.12xlarge=234 x8g.16xlarge=737 "
    "x8g.24xlarge=737 x8g.2xlarge=58 x8g.48xlarge=737 x8g.4xlarge=234 x8g.8xlarge=234 x8g.large=29 "
    "x8g.medium=8 x8g.metal-24xl=737 x8g.metal-48xl=737 x8g.xlarge=58 x8i.12xlarge=590 x8i.16xlarge=1010 "
    "x8i.24xlarge=1010 x8i.2xlarge=118 x8i.32xlarge=1514 x8i.48xlarge=1514 x8i.4xlarge=394 x8i.64xlarge=1514 "
    "x8i.8xlarge=492 x8i.96xlarge=1514 x8i.large=59 x8i.metal-48xl=1514 x8i.metal-96xl=1514 x8i.xlarge=118 "
    "z1d.12xlarge=737 z1d.2xlarge=58 z1d.3xlarge=234 z1d.6xlarge=234 z1d.large=29 z1d.metal=737 z1d.xlarge=58 "
)
ENI_MAX_PODS: dict[str, int] = {k: int(v) for k, v in (p.split("=") for p in "".join(_ROWS).split())}

# Rows whose figure is the ENIs of every network card: when upstream generated them EC2 reported one card for
# these types; the EC2 data moto ships (newer) splits their ENIs over two cards, and upstream's own rule
# (scripts/gen_vpc_ip_limits.go: the default card's ENIs when a type has more than one card) then gives the
# default card's figure. Value: (upstream's figure, the ENIs of all cards it was computed from).
SPLIT_SINCE: dict[str, tuple[int, int]] = {
    "i7ie.48xlarge": (737, 15),
    "i7ie.metal-48xl": (737, 15),
    "i8ge.48xlarge": (1178, 24),
    "i8ge.metal-48xl": (1178, 24),
}


@dataclass(frozen=True)
class CalculatorCase:
    """max-pods-calculator.sh --instance-type T --cni-version 1.18.0 [flags] -> (recommended, --show-max-allowed)."""

    instance_type: str
    prefix_delegation: bool = False
    custom_networking: bool = False
    max_eni: int | None = None
    recommended: int = 0
    allowed: int = 0


CALCULATOR: tuple[CalculatorCase, ...] = (
    # m5.large: nitro, 2 vCPUs, 3 ENIs x 10 IPv4
    CalculatorCase("m5.large", recommended=29, allowed=29),
    CalculatorCase("m5.large", custom_networking=True, recommended=20, allowed=20),
    CalculatorCase("m5.large", prefix_delegation=True, recommended=110, allowed=434),
    CalculatorCase("m5.large", prefix_delegation=True, custom_networking=True, recommended=110, allowed=290),
    CalculatorCase("m5.large", max_eni=2, recommended=20, allowed=20),
    CalculatorCase("m5.large", max_eni=1, custom_networking=True, recommended=2, allowed=2),
    # m5.4xlarge: 16 vCPUs, 8 x 30: the 110 cap holds without prefix delegation too
    CalculatorCase("m5.4xlarge", recommended=110, allowed=234),
    CalculatorCase("m5.4xlarge", prefix_delegation=True, recommended=110, allowed=3714),
    # m5.24xlarge: 96 vCPUs, 15 x 50
    CalculatorCase("m5.24xlarge", recommended=250, allowed=737),
    CalculatorCase("m5.24xlarge", custom_networking=True, recommended=250, allowed=688),
    # Xen types: prefix delegation is not counted (IS_NITRO false)
    CalculatorCase("t2.micro", prefix_delegation=True, recommended=4, allowed=4),
    CalculatorCase("m4.large", prefix_delegation=True, recommended=20, allowed=20),
    CalculatorCase("m4.large", prefix_delegation=True, custom_networking=True, recommended=11, allowed=11),
    # several network cards: the default card's ENIs only
    CalculatorCase("p4d.24xlarge", recommended=250, allowed=737),
    CalculatorCase("p5.48xlarge", recommended=100, allowed=100),
    CalculatorCase("p5.48xlarge", custom_networking=True, recommended=51, allowed=51),
    CalculatorCase("p5.48xlarge", prefix_delegation=True, recommended=250, allowed=1570),
    CalculatorCase("trn1.32xlarge", recommended=247, allowed=247),
    CalculatorCase("m6in.32xlarge", recommended=250, allowed=394),
    CalculatorCase("c6in.32xlarge", recommended=250, allowed=394),
    CalculatorCase("hpc7a.96xlarge", recommended=100, allowed=100),
    CalculatorCase("hpc7a.96xlarge", max_eni=1, recommended=51, allowed=51),
)


@dataclass(frozen=True)
class WarmRow:
    """One row of a warm-target table: the node's settings and pods, and what ipamd then holds.

    `enis` are the attached ENIs, `held` the attached secondary IPs (eni-and-ip-target.md) or /28 prefixes
    (prefix-and-ip-target.md), `unused` the addresses no pod uses. `differs` names the columns upstream's table
    states otherwise than ipamd's code computes, and why.
    """

    instance_type: str
    warm: int | None  # WARM_ENI_TARGET (IP table) or WARM_PREFIX_TARGET (prefix table); None: "-"
    warm_ip: int | None
    minimum_ip: int | None
    pods: int
    enis: int
    held: int
    unused: int
    differs: tuple[str, ...] = ()
    why: str = ""


IP_TARGET_ROWS: tuple[WarmRow, ...] = (
    WarmRow("t3.small", 1, None, None, 0, 1, 3, 3),
    WarmRow("t3.small", 1, None, None, 5, 3, 9, 4),
    WarmRow("t3.small", 1, None, None, 9, 3, 9, 0),
    WarmRow("t3.small", None, 1, 1, 0, 1, 1, 1),
    WarmRow("t3.small", None, 1, 1, 5, 2, 6, 1),
    WarmRow("t3.small", None, 1, 1, 9, 3, 9, 0),
    WarmRow("t3.small", None, 2, 5, 0, 2, 5, 5),
    WarmRow("t3.small", None, 2, 5, 5, 3, 7, 2),
    WarmRow("t3.small", None, 2, 5, 9, 3, 9, 0),
    WarmRow("p3dn.24xlarge", 1, None, None, 0, 1, 49, 49),
    WarmRow("p3dn.24xlarge", 1, None, None, 3, 2, 98, 95),
    WarmRow("p3dn.24xlarge", 1, None, None, 95, 3, 147, 52),
    WarmRow("p3dn.24xlarge", None, 5, 10, 0, 1, 10, 10),
    WarmRow("p3dn.24xlarge", None, 5, 10, 7, 1, 12, 5),
    WarmRow("p3dn.24xlarge", None, 5, 10, 15, 1, 20, 5),
    WarmRow("p3dn.24xlarge", None, 5, 10, 45, 2, 50, 5),
)

_EMPTY_ENIS = (
    "the table lists ENIs that hold no prefix (prefixes per ENI 2,0 / 7,0,0 / 4,0); in prefix mode ipamd attaches "
    "an ENI only when no attached ENI has room for another prefix (increaseDatastorePool), and a p3dn ENI has "
    "room for 49"
)

PREFIX_TARGET_ROWS: tuple[WarmRow, ...] = (
    WarmRow("t3.small", 1, None, None, 0, 1, 1, 16),
    WarmRow("t3.small", 1, None, None, 5, 1, 2, 27),
    WarmRow("t3.small", 1, None, None, 16, 1, 2, 16),
    WarmRow("t3.small", 1, None, None, 17, 1, 3, 31),
    WarmRow("t3.small", 1, None, None, 58, 2, 5, 22),
    WarmRow("t3.small", None, 1, 1, 0, 1, 1, 16),
    WarmRow("t3.small", None, 1, 1, 5, 1, 1, 11),
    WarmRow("t3.small", None, 1, 1, 17, 1, 2, 15),
    WarmRow("t3.small", None, 1, 1, 58, 2, 4, 6),
    WarmRow(
        "t3.small",
        None,
        7,
        20,
        0,
        1,
        1,
        16,
        differs=("held", "unused"),
        why="the row contradicts itself (pods per prefix 0,0 and prefixes per ENI 2, but 1 attached prefix): "
        "MINIMUM_IP_TARGET=20 needs ceil(20/16) = 2 prefixes (datastoreTargetState), 32 unused addresses",
    ),
    WarmRow("t3.small", None, 7, 20, 5, 1, 2, 27),
    WarmRow("t3.small", None, 7, 20, 17, 1, 2, 15),
    WarmRow("t3.small", None, 7, 20, 58, 2, 5, 22),
    WarmRow("p3dn.24xlarge", 1, None, None, 0, 1, 1, 16),
    WarmRow("p3dn.24xlarge", 1, None, None, 3, 2, 2, 29, differs=("enis",), why=_EMPTY_ENIS),
    WarmRow("p3dn.24xlarge", 1, None, None, 95, 3, 7, 17, differs=("enis",), why=_EMPTY_ENIS),
    WarmRow("p3dn.24xlarge", None, 5, 10, 0, 1, 1, 16),
    WarmRow("p3dn.24xlarge", None, 5, 10, 7, 1, 1, 9),
    WarmRow("p3dn.24xlarge", None, 5, 10, 15, 1, 2, 17),
    WarmRow("p3dn.24xlarge", None, 5, 10, 45, 2, 4, 19, differs=("enis",), why=_EMPTY_ENIS),
)
