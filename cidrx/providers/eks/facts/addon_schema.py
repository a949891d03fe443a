"""Check the configurationValues a plan would give the vpc-cni add-on against the add-on's own JSON schema.

Why it exists: EKS validates `UpdateAddon`'s configurationValues against the schema of the installed add-on
version (`DescribeAddonConfiguration`'s `configurationSchema`) and rejects the update mid-apply when a key or
value is not allowed (an env key the version does not know, a boolean spelled `yes`). cidrx collects that
schema with the snapshot and checks the whole configuration it would write (what is there, plus its env
keys) at plan time, so a plan that cannot be applied is refused before review, with the schema's message.
Pure; `jsonschema` is imported only when there is a schema to check against.
"""

from __future__ import annotations

import json
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.providers.eks.model import Addon


def parse_configuration(text: str) -> dict[str, Any]:
    """configurationValues as EKS stores them (JSON, or YAML, which EKS also accepts)."""
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InvalidInput(f"the add-on's configurationValues are neither JSON nor YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInput("the add-on's configurationValues are not a JSON object")
    return data


def with_env(configuration: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """The configuration with `env` merged into its env map (keys others set are kept)."""
    current = configuration.get("env")
    return {**configuration, "env": {**(current if isinstance(current, dict) else {}), **env}}


def schema_problem(schema_text: str, configuration: dict[str, Any]) -> str | None:
    """The schema's message for the most relevant violation, or None when the configuration is accepted
    (or there is no schema to check against)."""
    if not schema_text.strip():
        return None
    from jsonschema import exceptions, validators

    try:
        schema = json.loads(schema_text)
        validator = validators.validator_for(schema)(schema)
        error = exceptions.best_match(validator.iter_errors(configuration))
    except (ValueError, exceptions.SchemaError) as exc:
        return f"the add-on's configuration schema is unreadable ({exc})"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def check_env_update(addon: Addon, env: dict[str, str]) -> None:
    """Refuse (exit 2) a plan whose add-on update the installed version's schema rejects."""
    if not addon.configuration_schema.strip():
        return  # not collected (older snapshot, no eks:DescribeAddonConfiguration): EKS checks at apply
    merged = with_env(parse_configuration(addon.configuration_values), env)
    problem = schema_problem(addon.configuration_schema, merged)
    if problem:
        raise InvalidInput(
            f"the {addon.name} add-on {addon.version} would reject the configuration this plan writes "
            f"({json.dumps(env, sort_keys=True)}): {problem}",
            hint="check the add-on version's schema (aws eks describe-addon-configuration); upgrading the add-on "
            "may be needed first",
        )
