"""The TARGET options every command shares (docs/cli.md), their env vars, and their validation.

One decorator adds them and hands the command a single `TargetOptions`; `resolve_target` turns that into
a Target or a one-line InvalidInput (exit 2), so every command names targets and fails the same way.
`--context` may be given more than once only where the command is declared with `fleet_target_options`
(`diagnose`, which diagnoses several clusters at once); everywhere else a second one is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import click

from cidrx import registry
from cidrx.errors import InvalidInput
from cidrx.model.options import Access
from cidrx.model.target import Provider, Target, option_flag


@dataclass(frozen=True)
class TargetOptions(Access):
    """The TARGET flags as given (flag or CIDRX_<OPTION> env var), before validation. It is an `Access`
    (kubeconfig, context, profile, no_kube), which is all the layers below the CLI receive."""

    provider: Provider | None = None
    region: str | None = None
    cluster: str | None = None
    project: str | None = None
    location: str | None = None
    subscription: str | None = None
    resource_group: str | None = None
    # Every --context given, in order (fleet mode); `context` is the one context when there is one.
    contexts: tuple[str, ...] = ()
    # Options whose value came from the environment (CIDRX_<OPTION>, AWS_REGION, ...), not the command line.
    from_env: frozenset[str] = frozenset()

    def given(self) -> list[str]:
        """The target-naming flags that were set, as `--flag` strings (for error messages)."""
        return [option_flag(n) for n in NAMING if getattr(self, n)]


# The TARGET options that name a cluster (Target fields), and with --profile every value option of the TARGET.
NAMING = ("region", "cluster", "project", "location", "subscription", "resource_group")
VALUES = (*NAMING, "profile")


def _provider_options() -> list[Callable[[Callable[..., Any]], Callable[..., Any]]]:
    return [
        click.option(p.flag, p.name, is_flag=True, envvar=f"CIDRX_{p.name.upper()}", help=p.help)
        for p in registry.providers()
    ]


_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option(
        "--region",
        envvar="CIDRX_REGION",
        metavar="R",
        help="AWS region of the EKS cluster [default: AWS_REGION, else AWS_DEFAULT_REGION].",
    ),
    click.option("--cluster", envvar="CIDRX_CLUSTER", metavar="C", help="Cluster name."),
    click.option("--profile", envvar="CIDRX_PROFILE", metavar="NAME", help="AWS profile (default: the usual chain)."),
    click.option("--project", envvar="CIDRX_PROJECT", metavar="P", help="GCP project of the GKE cluster."),
    click.option("--location", envvar="CIDRX_LOCATION", metavar="L", help="GKE region or zone."),
    click.option(
        "--subscription",
        envvar="CIDRX_SUBSCRIPTION",
        metavar="S",
        help="Azure subscription id of the AKS cluster [default: AZURE_SUBSCRIPTION_ID].",
    ),
    click.option(
        "--resource-group", envvar="CIDRX_RESOURCE_GROUP", metavar="G", help="Azure resource group of the AKS cluster."
    ),
    click.option(
        "--kubeconfig", envvar="CIDRX_KUBECONFIG", metavar="PATH", help="Kubeconfig (default: standard resolution)."
    ),
    click.option("--no-kube", is_flag=True, envvar="CIDRX_NO_KUBE", help="Skip in-cluster checks."),
]


class _ContextName(click.types.StringParamType):
    """A context name. `--context` is a multiple option, and click splits a multiple option's env var
    on whitespace; CIDRX_CONTEXT stays one name, whatever it holds."""

    def split_envvar_value(self, rv: str) -> Sequence[str]:
        return [rv] if rv else []


def _context_option(fleet: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    more = " Repeat it with --k8s to diagnose several clusters at once." if fleet else ""
    return click.option(
        "--context",
        "context",
        multiple=True,
        type=_ContextName(),
        envvar="CIDRX_CONTEXT",
        metavar="NAME",
        help=f"Kubeconfig context (default: current).{more}",
    )


def _add_target_options(f: Callable[..., Any], *, fleet: bool) -> Callable[..., Any]:
    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        ctx = click.get_current_context(silent=True)
        from_env = {
            name
            for name in (*registry.provider_names(), *_LIVE_ONLY, "region", "cluster", "project", "location")
            if ctx is not None and ctx.get_parameter_source(name) is click.core.ParameterSource.ENVIRONMENT
        }
        chosen = [p for p in registry.provider_names() if kwargs.pop(p)]
        if len(chosen) > 1:
            raise InvalidInput(f"choose one provider, not {' and '.join('--' + p for p in chosen)}")
        contexts = tuple(kwargs.pop("context") or ())
        if len(contexts) > 1 and not fleet:
            raise InvalidInput(
                f"--context was given {len(contexts)} times; this command reads one cluster "
                "(only `cidrx diagnose --k8s` takes several)"
            )
        given = {name: kwargs.pop(name) for name in VALUES}
        spec = registry.provider_spec(chosen[0]) if len(chosen) == 1 else None
        for name, variables in spec.env_defaults if spec is not None else ():
            if given[name] is None:
                given[name] = next((os.environ[v] for v in variables if os.environ.get(v)), None)
                from_env.add(name)
        opts = TargetOptions(
            provider=chosen[0] if chosen else None,
            **given,
            kubeconfig=kwargs.pop("kubeconfig"),
            context=contexts[0] if len(contexts) == 1 else None,
            no_kube=kwargs.pop("no_kube"),
            contexts=contexts,
            from_env=frozenset(from_env),
        )
        return f(*args, target=opts, **kwargs)

    options = [*_provider_options(), *_OPTIONS[:-1], _context_option(fleet), _OPTIONS[-1]]
    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


def target_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the TARGET options to a click command; it receives them as one `target: TargetOptions`."""
    return _add_target_options(f, fleet=False)


def fleet_target_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The TARGET options of a command that can read several clusters: `--context` may repeat."""
    return _add_target_options(f, fleet=True)


class OutputFormat(click.Choice):  # type: ignore[type-arg]
    """`-o`: one of the formats, with `text` accepted as another name for `table` (what many tools call it)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert("table" if value == "text" else value, param, ctx)


def _missing(opts: TargetOptions, names: tuple[str, ...]) -> list[str]:
    return [option_flag(n) for n in names if not getattr(opts, n)]


def _refuse(opts: TargetOptions, provider: str, names: tuple[str, ...], instead: str) -> None:
    extra = [option_flag(n) for n in names if getattr(opts, n)]
    if extra:
        raise InvalidInput(
            f"{', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not used with --{provider}; {instead}"
        )


def _refused(spec: registry.ProviderSpec) -> tuple[str, ...]:
    """What a provider's targets refuse: its declared `refuses`, and every other provider's naming option it
    does not take itself (a flag that would otherwise be ignored in silence)."""
    others = (n for n in NAMING if n not in spec.requires and n != "cluster")
    return tuple(dict.fromkeys((*spec.refuses, *others)))


def env_hint(spec: registry.ProviderSpec, missing: list[str]) -> str:
    """The variables that could have given the missing options, and only those: "(or CIDRX_CLUSTER)" for a
    missing --cluster, "(or CIDRX_REGION / AWS_REGION / AWS_DEFAULT_REGION)" for a missing --region."""
    defaults = dict(spec.env_defaults)
    names = [v for m in missing for v in (f"CIDRX_{m.lstrip('-').upper()}", *defaults.get(m.lstrip("-"), ()))]
    return f"(or {' / '.join(names)})" if names else ""


def resolve_target(opts: TargetOptions) -> Target:
    """The validated Target the flags name; InvalidInput (exit 2) with one line saying what to pass."""
    if len(opts.contexts) > 1:
        raise InvalidInput(f"--context was given {len(opts.contexts)} times; one target reads one cluster")
    if opts.provider is None:
        raise InvalidInput(
            "no target: pass --eks --region R --cluster C (or --gke / --k8s), or --snapshot FILE",
            hint="every target option can also come from the environment, e.g. CIDRX_EKS=1 CIDRX_REGION=...",
        )
    spec = registry.provider_spec(opts.provider)
    if spec is None:
        raise InvalidInput(f"unknown provider {opts.provider!r}")
    if not spec.in_cluster:
        missing = _missing(opts, spec.requires)
        if missing:
            raise InvalidInput(f"{spec.flag} needs {' and '.join(missing)} {env_hint(spec, missing)}".rstrip())
        _refuse(opts, spec.name, _refused(spec), spec.refuse_reason)
        # The kube context is how we reach the cluster, not which cluster it is: keep it out of the
        # Target so a plan made through one kubeconfig applies through another.
        fields = {name: getattr(opts, name) for name in spec.requires if name != "cluster"}
        return Target(spec.name, opts.cluster or "", **fields)
    _refuse(opts, spec.name, _refused(spec), spec.refuse_reason)
    if opts.no_kube:
        raise InvalidInput(f"{spec.flag} works only through the Kubernetes API; drop --no-kube")
    name = opts.cluster or opts.context
    if not name:
        from cidrx.kube.kubeconfig import current_context

        # Named after the context kubeconfig resolution picks, never a placeholder: the name is in the
        # header, the plan file's name and the Prometheus `target` label of every cluster.
        name = current_context(opts.kubeconfig) or "no-kubeconfig"
    return Target(spec.name, name, context=opts.context)


# Options that only say how to reach a live cluster or cloud; a snapshot file has already been read.
_LIVE_ONLY = ("context", "kubeconfig", "profile", "no_kube")


def for_snapshot(opts: TargetOptions, what: str) -> TargetOptions:
    """`opts` for reading `what` (a snapshot file): values the environment set for live runs (CIDRX_CLUSTER,
    AWS_REGION, CIDRX_CONTEXT, ...) are dropped, and live-only flags given on the command line are refused."""
    live = [f"--{n.replace('_', '-')}" for n in _LIVE_ONLY if getattr(opts, n) and n not in opts.from_env]
    if live:
        raise InvalidInput(
            f"{', '.join(live)} {'does' if len(live) == 1 else 'do'} not apply to {what}: "
            "it holds what was read from the cluster already",
            hint="drop them, or drop --snapshot to read the cluster live",
        )
    cleared: dict[str, Any] = {n: None for n in ("region", "cluster", "project", "location") if n in opts.from_env}
    if opts.provider in opts.from_env:
        cleared["provider"] = None
    return dataclasses.replace(
        opts, **cleared, kubeconfig=None, context=None, contexts=(), profile=None, no_kube=False, from_env=frozenset()
    )


def check_matches(opts: TargetOptions, target: Target, what: str) -> None:
    """When target flags are given next to a file that carries its own target (a snapshot, a plan), they
    must agree with it: pointing a plan at the wrong cluster by accident must be impossible."""
    wrong = []
    if opts.provider and opts.provider != target.provider:
        wrong.append(f"--{opts.provider}")
    for name in NAMING:
        given = getattr(opts, name)
        if given and given != getattr(target, name):
            wrong.append(f"{option_flag(name)} {given}")
    if wrong:
        raise InvalidInput(f"{what} is for {target.label()}, but {', '.join(wrong)} was given")


class RegisteredChoice(click.Choice[str]):
    """A Choice of names the registry gives when asked, so that a plugin registered after the CLI was built
    (one line in a test, or a package imported later) is among them in parsing and in `--help`."""

    def __init__(self, names: Callable[[], Sequence[str]]) -> None:
        self._names = names
        super().__init__(names())

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return tuple(self._names())

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:
        """Set by click.Choice.__init__; the registry stays the source."""
