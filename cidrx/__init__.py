"""cidrx: find why Kubernetes pods cannot get IP addresses, then plan and apply the fix."""

# The only place the version is written: pyproject.toml reads it (tool.setuptools.dynamic), and the
# installed package metadata, `cidrx --version` and importlib.metadata.version("cidrx") all follow it.
__version__ = "0.1.0"
