"""The one place user-facing errors live, each carrying its exit code (README, docs/cli.md).

Every layer raises these; only the CLI boundary turns them into a line on stderr and an exit code.
Messages say what happened and what to do next.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_FINDINGS = 3
EXIT_STALE = 4
EXIT_PARTIAL = 5
EXIT_ACCESS = 6
EXIT_RETRY_LATER = 7


class CidrxError(Exception):
    """Base of every error the user should see as one line; `exit_code` picks the process exit code."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class InvalidInput(CidrxError):
    """Bad flags, a bad CIDR, an unreadable/corrupt/tampered plan or snapshot file."""

    exit_code = EXIT_USAGE


class StalePlan(CidrxError):
    """The cloud or cluster changed since the plan was made; nothing was applied."""

    exit_code = EXIT_STALE


class ApplyInterrupted(CidrxError):
    """Apply stopped partway; the journal lets the same command resume."""

    exit_code = EXIT_PARTIAL


class AccessDenied(CidrxError):
    """Credentials missing or expired, permission denied, or the target does not exist."""

    exit_code = EXIT_ACCESS


class Unreachable(AccessDenied):
    """The cloud or cluster a command needs cannot be reached (or its certificate cannot be verified)."""


class RetriesExhausted(CidrxError):
    """The cloud or cluster kept failing (5xx, throttling) after every retry; nothing is wrong with the input."""

    exit_code = EXIT_RETRY_LATER


class CloudError(CidrxError):
    """The cloud rejected a request for a reason that is neither access nor input (surfaced verbatim).

    Exit 1 outside apply (no exit code fits better); the apply loop turns it into exit 5.
    """

    exit_code = EXIT_INTERNAL
