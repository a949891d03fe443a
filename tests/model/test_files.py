"""Safe file writes (cidrx.model.files) and the CLI writers that use them: atomic replace with the mode kept,
symlinks written through, directories/FIFOs/sockets refused and left untouched, a file-size limit or full disk
one line and exit 2. Every special file is made in a temporary directory; no real device is written."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cidrx.errors import InvalidInput
from cidrx.model import files
from tests.support.cli import one_line_error, run

REPO = Path(__file__).resolve().parents[2]
EKS_EX = str(REPO / "examples" / "eks-demo-ip.snapshot.json")


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    old = os.umask(0o027)
    try:
        files.write_file(target, "{}\n")
    finally:
        os.umask(old)
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temporary file left behind


def test_a_regular_file_is_replaced_with_its_mode_kept(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("old")
    target.chmod(0o600)
    inode = target.stat().st_ino
    files.write_file(target, b"new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place


def test_a_symlink_is_written_through_and_survives(tmp_path: Path) -> None:
    real = tmp_path / "real" / "plan.json"
    real.parent.mkdir()
    real.write_text("old")
    real.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    files.write_file(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new" and stat.S_IMODE(real.stat().st_mode) == 0o640
    assert sorted(p.name for p in real.parent.iterdir()) == ["plan.json"]


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "made.json")
    files.write_file(link, "x")
    assert link.is_symlink() and (tmp_path / "made.json").read_text() == "x"


def _fifo(tmp: Path) -> Path:
    path = tmp / "fifo"
    os.mkfifo(path)
    return path


def _socket(tmp: Path) -> Path:
    path = tmp / "sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()
    return path


def _directory(tmp: Path) -> Path:
    path = tmp / "dir"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("make", "kind"),
    [(_fifo, "a FIFO"), (_socket, "a socket"), (_directory, "a directory")],
    ids=["fifo", "socket", "directory"],
)
@pytest.mark.parametrize("through_link", [False, True], ids=["direct", "symlink"])
def test_special_files_are_refused_and_left_untouched(
    tmp_path: Path, make: object, kind: str, through_link: bool
) -> None:
    special = make(tmp_path)  # type: ignore[operator]
    path = special
    if through_link:
        path = tmp_path / "link"
        path.symlink_to(special)
    before = os.lstat(special)
    with pytest.raises(InvalidInput, match=f"refusing to write .*: it is {kind}"):
        files.write_file(path, "x")
    after = os.lstat(special)
    assert (after.st_ino, after.st_mode, after.st_mtime_ns) == (before.st_ino, before.st_mode, before.st_mtime_ns)
    assert not [p for p in special.parent.iterdir() if p.name.startswith(".")]


def test_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"cannot write .*No such file or directory") as info:
        files.write_file(tmp_path / "nope" / "plan.json", "x")
    assert info.value.hint is None


def test_cli_out_to_a_fifo_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path)
    for args in (
        ["expand", "--plan", "--snapshot", EKS_EX, "--out", str(fifo)],
        ["expand", "--plan", "--snapshot", EKS_EX, "--out", str(tmp_path), "--emit", "terraform"],
    ):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert "refusing to write" in one_line_error(result)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_cli_plan_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "plans" / "p.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "p.json"
    link.symlink_to(real)
    result = run("expand", "--plan", "--snapshot", EKS_EX, "--out", str(link), "--emit", "terraform")
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and '"schema": "cidrx.plan/v1"' in real.read_text()
    assert (tmp_path / "p.tf").exists()


def _cidrx(args: list[str], *, fsize: int | None = None, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")}

    def limit() -> None:
        import resource

        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return subprocess.run(
        [sys.executable, "-m", "cidrx", *args],
        cwd=REPO,
        env=env,
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )


def test_a_file_size_limit_is_one_line_exit_2_and_keeps_the_old_file(tmp_path: Path) -> None:
    # RLIMIT_FSIZE makes write(2) fail with EFBIG the way a full disk fails with ENOSPC (CPython ignores
    # SIGXFSZ, so the process gets the error instead of being killed).
    target = tmp_path / "plan.json"
    target.write_text("old")
    proc = _cidrx(["expand", "--plan", "--snapshot", EKS_EX, "--out", str(target)], fsize=1024)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(f"cidrx: error: cannot write {target}: File too large"), lines
    assert all(line.startswith(("cidrx: error:", "hint:")) for line in lines)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_dev_stdout_means_stdout(tmp_path: Path) -> None:
    # A path that is the process's stdout already is printed to, not replaced behind the reader's back.
    out = tmp_path / "captured"
    with out.open("w") as fh:
        proc = _cidrx(["expand", "--plan", "--snapshot", EKS_EX, "--out", "/dev/stdout"], stdout=fh.fileno())
    assert proc.returncode == 0, proc.stderr
    assert '"schema": "cidrx.plan/v1"' in out.read_text()
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())
