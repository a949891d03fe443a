"""cidrx: find why Kubernetes pods cannot get IP addresses, then plan and apply the fix."""

__version__ = "0.1.0"
