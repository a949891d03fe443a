"""`cidrx diagnose` as a person reads it: typed into a shell in a real terminal (tmux), at 80x50 and 120x40.

The terminal is what the person sees, not what the renderer returned: tmux's own screen, read back with
`capture-pane`. The verdict is the first line under the command, the whole first CRITICAL finding is on
the first screen (nothing to scroll back for), no line is longer than the terminal (tmux would wrap it
itself) and no token (an id, a CIDR, an environment variable) is split across two lines. The shell is
bash without any profile, in an empty environment, so nothing of the developer's terminal leaks in; its
prompt signals a tmux channel, so the test waits for the command to finish instead of sleeping. Without
tmux the tests skip, unless CIDRX_REQUIRE_TOOLS requires it (CI), where they fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from itertools import count, pairwise
from pathlib import Path

import pytest

from cidrx.app.diagnose import analyze
from cidrx.model.snapshot import load_snapshot
from tests.support.tools_required import require_tool

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WHY = "reads `cidrx diagnose` back from a real terminal"
# A ceiling for one tmux command, so a broken shell fails the test instead of hanging it (not a timing assert).
LIMIT = 60
_SERVERS = count()


class Pane:
    """A tmux server of our own (its own socket), one session running a bare bash."""

    def __init__(self, tmux: str, name: str, width: int, height: int, home: Path) -> None:
        self.tmux = [tmux, "-L", name, "-f", "/dev/null"]
        self.size = (width, height)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        # The prompt signals a channel the test waits on (PROMPT_COMMAND runs just before the prompt shows).
        rc = home / "bashrc"
        rc.write_text(f"PS1='$ '\nPROMPT_COMMAND='{tmux} -L {name} wait-for -S prompt'\n")
        path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
        env = ["env", "-i", f"PATH={path}", f"HOME={home}", "TERM=screen", "LANG=C.UTF-8"]
        size = ["-x", str(width), "-y", str(height)]
        shell = ["bash", "--noprofile", "--rcfile", str(rc), "-i"]
        self.run("new-session", "-d", *size, "-c", str(EXAMPLES), "--", *env, *shell)
        self.run("wait-for", "prompt")
        self.run("clear-history")

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [*self.tmux, *args], env=self.env, capture_output=True, text=True, timeout=LIMIT, check=True
        )
        return done.stdout

    def type(self, command: str) -> list[str]:
        """Type `command` at the prompt, wait for the next prompt, and return the pane's lines (see `lines`)
        once that prompt is on the screen: tmux reads the shell's output apart from the signal, so the
        signal can come first; the prompt is the last thing the shell writes, so all the output is there."""
        self.run("send-keys", "-l", command)
        self.run("send-keys", "Enter")
        self.run("wait-for", "prompt")
        for _ in range(1000):  # a bounded retry, no sleep: each capture is a round trip to the server
            lines = self.lines()
            if lines and lines[-1] == "$" and len(lines) > 2:
                return lines
        raise AssertionError(f"no prompt after {command!r}: {lines[-5:]}")

    def lines(self, *, joined: bool = False) -> list[str]:
        """Every line of the pane from its first row (its history included), as on the screen, or with the
        lines tmux itself wrapped joined back (`joined`)."""
        text = self.run("capture-pane", "-p", "-S", "-", *(["-J"] if joined else []))
        return [line.rstrip() for line in text.rstrip("\n").split("\n")]

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], env=self.env, capture_output=True, timeout=LIMIT, check=False)


@pytest.fixture
def pane(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Pane]:
    tmux = require_tool("tmux", WHY)
    width, height = request.param
    p = Pane(tmux, f"cidrx-test-{os.getpid()}-{next(_SERVERS)}", width, height, tmp_path)
    try:
        yield p
    finally:
        p.close()


def _tokens(example: str) -> set[str]:
    """The words of the diagnosis a person may copy (ids, CIDRs, names, environment variables, flags)."""
    d = analyze(load_snapshot(EXAMPLES / f"{example}.snapshot.json"))
    texts = [t for f in d.findings for t in (f.id, f.subject, f.summary, f.remediation, *f.evidence)]
    texts += [t for c in d.capacity for t in (c.name, c.cidr or "", c.zone or "")]
    return {w.strip("(),;:`'\".") for t in texts for w in t.split() if len(w.strip("(),;:`'\".")) >= 6}


@pytest.mark.parametrize("example", ["eks-demo-ip", "calico-borrowing"])
@pytest.mark.parametrize("pane", [(80, 50), (120, 40)], indirect=True, ids=["80x50", "120x40"])
def test_verdict_first_and_the_first_critical_finding_on_the_first_screen(pane: Pane, example: str) -> None:
    command = f"cidrx diagnose --snapshot {example}.snapshot.json"
    lines = pane.type(command)
    width = int(pane.run("display-message", "-p", "#{window_width}"))
    height = int(pane.run("display-message", "-p", "#{window_height}"))
    assert (width, height) == pane.size  # the terminal is the size asked for
    # The rows up to the end of the typed command. Keys that reach the terminal just before readline reads
    # them are echoed twice ("cidrx ...$ cidrx ..."), which may take a row more: the screen checks below
    # only get stricter for it.
    typed = next(i for i in range(len(lines)) if "".join(lines[: i + 1]).endswith(f"$ {command}"))
    out = lines[typed + 1 : -1]

    # The verdict is the first line a person reads.
    assert re.match(r"^CRITICAL: \S", out[0]), out[:3]
    # The whole first CRITICAL finding is on the first screen (rows 0 to height-1, the command on top).
    first = next(i for i, line in enumerate(out) if re.match(r"^CRITICAL [A-Z0-9-]+  ", line))
    end = next(i for i in range(first + 1, len(out)) if out[i] and not out[i].startswith(" "))
    last_row = typed + 1 + end - 1
    assert last_row <= height - 1, f"the first critical finding ends on row {last_row} of a {height}-row screen"
    assert any(line.lstrip().startswith("fix:") for line in out[first:end])

    # No line is wider than the terminal, so tmux wrapped none itself.
    assert all(len(line) <= width for line in out), [line for line in out if len(line) > width]
    joined = pane.lines(joined=True)
    assert joined[joined.index(out[0]) :][: len(out)] == out

    # No token is split across two lines (it would not survive a copy and paste).
    tokens = _tokens(example)
    broken = [
        (a, b)
        for a, b in pairwise(out)
        if a.split() and b.split()
        for pair in [a.split()[-1] + b.split()[0]]
        if any(t in pair and t not in a.split()[-1] and t not in b.split()[0] for t in tokens)
    ]
    assert broken == []
    words = {w.strip("(),;:`'\".") for line in out for w in line.split()}
    assert "subnet-0cd55c38980375d58" in words or "default-ipv4-ippool" in words
