"""A finding's fix split into what to read and what to run, so every renderer prints commands one per line.

Remediation text (`Finding.remediation`) is prose with the commands in backticks: "Add pod address space:
`cidrx expand ... --plan --out plan.json` (a secondary CIDR ...)". A backticked span whose first word is a
command-line tool is a command; `split_fix` lifts those out, in order, and leaves the prose readable
without them. Any other backticked span (a config key, an object name) stays in the prose as it is.
Renderers then print each command on a line of its own (the terminal with `\\` continuations, Markdown in
a fenced block, HTML in `<pre><code>`), so each can be pasted into a shell as printed.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass

from cidrx import registry

# The tools any fix may name; each provider and IPAM adds its own (`fix_tools`).
_COMMON_TOOLS = ("cidrx", "kubectl", "terraform", "helm")


@functools.cache
def tools() -> frozenset[str]:
    """The tools whose command lines fixes name: a backticked span starting with one of them is a command."""
    declared = (t for spec in (*registry.providers(), *registry.ipams()) for t in spec.fix_tools)
    return frozenset((*_COMMON_TOOLS, *declared))


_SPAN = re.compile(r"``? ?([^`]+?) ?``?")


@dataclass(frozen=True)
class Fix:
    prose: str
    commands: tuple[str, ...]


def is_command(text: str) -> bool:
    words = text.split()
    return bool(words) and words[0] in tools()


def split_fix(remediation: str) -> Fix:
    """The prose of `remediation` without its backticked commands, and the commands in order."""
    commands: list[str] = []

    def lift(m: re.Match[str]) -> str:
        if not is_command(m[1]):
            return m[0]
        commands.append(m[1].strip())
        return "\0"

    prose = _SPAN.sub(lift, remediation)
    # Tidy what is left where a command stood: "space: \0 (note)." -> "space (note):", "and \0." -> "."
    prose = re.sub(r"\s*(?:\b(?:with|run|use|and|see)\b|[:,;])?\s*\0\s*", " \0 ", prose)
    prose = re.sub(r"(?:\s*\0\s*)+", " ", prose)
    prose = re.sub(r"\s+([.,;:)])", r"\1", prose)
    prose = re.sub(r"\(\s+", "(", prose).replace(" ()", "").replace("()", "")
    prose = re.sub(r"[;,:]\s*([.;,])", r"\1", prose)
    prose = re.sub(r"\s{2,}", " ", prose).strip()
    if commands and prose.endswith("."):
        prose = prose[:-1] + ":"
    elif commands and prose and not prose.endswith(":"):
        prose += ":"
    return Fix(prose, tuple(commands))


def continued(command: str, width: int, indent: str) -> list[str]:
    """`command` as shell lines no wider than `width` (when a word allows): broken between words only,
    every line but the last ending in ` \\`, so the lines pasted into a shell run the one command."""
    try:
        words = shlex.split(command)
        quoted = [shlex.quote(w) if shlex.quote(w) != w and " " in w else w for w in words]
        if shlex.split(" ".join(quoted)) != words:
            quoted = command.split()
    except ValueError:
        quoted = command.split()
    units: list[str] = []
    for word in quoted:  # an option stays on the line of its value: `--out plan.json`
        if units and units[-1].startswith("-") and " " not in units[-1] and not word.startswith("-"):
            units[-1] += " " + word
        else:
            units.append(word)
    lines: list[str] = []
    line = indent
    more = indent + "  "
    for word in units:
        if line.strip() and len(line) + 1 + len(word) + 2 > width:
            lines.append(line + " \\")
            line = more + word
        else:
            line = line + (" " if line.strip() else "") + word
    lines.append(line)
    return lines
