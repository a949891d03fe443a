"""The one place user-facing errors live, each carrying its exit code (README, docs/cli.md).

Every layer raises these; only the CLI boundary turns them into a line on stderr and an exit code.
Messages say what happened and what to do next.
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Every exit code cidrx gives (the `cidrx --help` epilog explains each)."""

    OK = 0
    INTERNAL = 1
    USAGE = 2
    FINDINGS = 3
    STALE = 4
    PARTIAL = 5
    ACCESS = 6
    RETRY_LATER = 7
    LOCKED = 8


# The older names, which the tests still use.
EXIT_OK = ExitStatus.OK
EXIT_INTERNAL = ExitStatus.INTERNAL
EXIT_USAGE = ExitStatus.USAGE
EXIT_FINDINGS = ExitStatus.FINDINGS
EXIT_STALE = ExitStatus.STALE
EXIT_PARTIAL = ExitStatus.PARTIAL
EXIT_ACCESS = ExitStatus.ACCESS
EXIT_RETRY_LATER = ExitStatus.RETRY_LATER
EXIT_LOCKED = ExitStatus.LOCKED


class CidrxError(Exception):
    """Base of every error the user should see as one line; `exit_code` picks the process exit code."""

    exit_code: int = ExitStatus.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InvalidInput(CidrxError):
    """Bad flags, a bad CIDR, an unreadable/corrupt/tampered plan or snapshot file."""

    exit_code: int = ExitStatus.USAGE


class StalePlan(CidrxError):
    """The cloud or cluster changed since the plan was made; nothing was applied."""

    exit_code: int = ExitStatus.STALE


class InUse(CidrxError):
    """A rollback would remove something still in use (nodes in a node group, network interfaces in a subnet,
    addresses in a range or pool); nothing was changed."""

    exit_code: int = ExitStatus.STALE


class ApplyInterrupted(CidrxError):
    """Apply stopped partway; the journal lets the same command resume."""

    exit_code: int = ExitStatus.PARTIAL


class AccessDenied(CidrxError):
    """Credentials missing or expired, permission denied, or the target does not exist."""

    exit_code: int = ExitStatus.ACCESS


class Unreachable(AccessDenied):
    """The cloud or cluster a command needs cannot be reached (or its certificate cannot be verified)."""


class RetriesExhausted(CidrxError):
    """The cloud or cluster kept failing (5xx, throttling) after every retry; nothing is wrong with the input."""

    exit_code: int = ExitStatus.RETRY_LATER


class CloudError(CidrxError):
    """The cloud rejected a request for a reason that is neither access nor input (surfaced verbatim).

    Exit 1 outside apply (no exit code fits better); the apply loop turns it into exit 5.
    """

    exit_code: int = ExitStatus.INTERNAL


class LockHeld(CidrxError):
    """Another apply or rollback of the same plan holds its lock (file lock beside the plan, cluster Lease)."""

    exit_code: int = ExitStatus.LOCKED
