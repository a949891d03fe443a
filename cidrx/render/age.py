"""How old the diagnosed snapshot is, for the headers of human-readable output.

A saved snapshot can be years old (the bundled examples are); a reader must see that before trusting a
finding. Text only: `-o json` carries `taken_at` as it is.
"""

from __future__ import annotations

from datetime import UTC, datetime

_UNITS = ((365 * 86400, "year"), (30 * 86400, "month"), (86400, "day"), (3600, "hour"), (60, "minute"))


def age_text(taken_at: str, now: datetime | None = None) -> str:
    """How long ago `taken_at` was: "3 years ago", "5 minutes ago", "just now"; "" when unreadable."""
    try:
        taken = datetime.strptime(taken_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return ""
    seconds = ((now or datetime.now(UTC)) - taken).total_seconds()
    if seconds < 0:
        return "in the future: check the clock"
    for size, unit in _UNITS:
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def taken_note(taken_at: str | None, now: datetime | None = None) -> str:
    """The header's " taken 2023-11-04T01:12:00Z, 3 years ago"; "" when the time is not known."""
    if not taken_at:
        return ""
    age = age_text(taken_at, now)
    return f" taken {taken_at}" + (f", {age}" if age else "")
