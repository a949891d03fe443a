"""Pytest plugin: the ledger of tests/test_faults.py's faulted runs and its line in the session summary.

Why it exists: a fault-injection suite that passes proves little unless it also shows that faults were
really injected and that each run then reached the fault-free result. Every faulted run records here how
many requests it made, the faults it injected by kind (throttle, 5xx, reset, refused) and whether its
result equalled the fault-free one; at the end of the session, when any such run happened, one line sums
them up (printed by pytest itself, so it shows with -q and without -s; -v adds one line per run).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

KINDS = ("throttle", "5xx", "reset", "refused")


@dataclass(frozen=True)
class FaultRun:
    name: str
    requests: int
    injected: Mapping[str, int]  # kind -> faults of that kind
    converged: bool  # its result equalled the fault-free one

    @property
    def total(self) -> int:
        return sum(self.injected.values())


@dataclass
class FaultLedger:
    runs: list[FaultRun] = field(default_factory=list)

    def record(self, run: FaultRun) -> None:
        self.runs.append(run)

    def summary(self) -> str:
        kinds: Counter[str] = Counter()
        for run in self.runs:
            kinds.update(run.injected)
        by_kind = ", ".join(f"{k} {kinds[k]:,}" for k in (*KINDS, *sorted(set(kinds) - set(KINDS))))
        total = sum(kinds.values())
        requests = sum(r.requests for r in self.runs)
        converged = sum(r.converged for r in self.runs)
        n = len(self.runs)
        line = f"faults: {total:,} injected ({by_kind}) over {requests:,} requests in {n} runs; "
        line += f"{converged}/{n} runs converged"
        failed = [r.name for r in self.runs if not r.converged]
        return line + (f" (not: {', '.join(failed)})" if failed else "")


LEDGER = pytest.StashKey[FaultLedger]()
WORKER_OUTPUT = "cidrx_fault_runs"  # key of a pytest-xdist worker's runs in what it sends the controller


def _ledger(config: pytest.Config) -> FaultLedger:
    if LEDGER not in config.stash:
        config.stash[LEDGER] = FaultLedger()
    return config.stash[LEDGER]


@pytest.fixture
def fault_ledger(request: pytest.FixtureRequest) -> FaultLedger:
    """The session's ledger of faulted runs (made on first use)."""
    return _ledger(request.config)


# Under pytest-xdist each worker fills its own ledger, and only the controller prints the summary: a worker
# hands its runs over when its session ends (`workeroutput`), and the controller adds them to its ledger.
def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    ledger = session.config.stash.get(LEDGER, None)
    if output is not None and ledger is not None:
        output[WORKER_OUTPUT] = [
            {"name": r.name, "requests": r.requests, "injected": dict(r.injected), "converged": r.converged}
            for r in ledger.runs
        ]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    runs = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT, [])
    ledger = _ledger(node.config)
    for run in runs:
        ledger.record(FaultRun(run["name"], run["requests"], run["injected"], run["converged"]))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    ledger = config.stash.get(LEDGER, None)
    if ledger is None or not ledger.runs:
        return
    terminalreporter.write_sep("-", "fault injection")
    if config.get_verbosity() > 0:
        for run in ledger.runs:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(run.injected.items()) if v)
            state = "converged" if run.converged else "DID NOT CONVERGE"
            terminalreporter.write_line(f"{run.name}: {run.total} of {run.requests} requests failed ({kinds}); {state}")
    terminalreporter.write_line(ledger.summary())
