"""The use cases, one module each: diagnose (collect and analyze a target), plan (expand and reclaim plans),
apply (one session: lock, fresh snapshot, drift check, run, verify), rollback, permissions, exporter and fleet.

The CLI parses, confirms and renders; everything it asks for is done here, by looking plugins up in the
registry (cidrx.app.owners), so nothing in this package names a cloud, an IPAM or a strategy.
"""
