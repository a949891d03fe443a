"""A small HCL writer that produces what `terraform fmt` would (so emitted files pass `fmt -check`).

Why it exists: `cidrx expand --emit terraform` writes HCL (cidrx.render.terraform, with the emitters each
provider keeps in its own terraform.py); this is the part that knows HCL's syntax and nothing of clouds.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SNIPPET_START = ">>> snippet"
SNIPPET_END = "<<< snippet"
COMMENT_WIDTH = 110


class Expr(str):
    """An HCL expression written as is (a reference, a function call), not quoted."""


@dataclass
class Block:
    type: str
    labels: tuple[str, ...] = ()
    body: list[Attr | Block | Comment] = field(default_factory=list)

    def attr(self, name: str, value: Any) -> Block:
        self.body.append(Attr(name, value))
        return self

    def block(self, type_: str, *labels: str) -> Block:
        child = Block(type_, labels)
        self.body.append(child)
        return child

    def comment(self, text: str) -> Block:
        self.body.append(Comment(text))
        return self


@dataclass(frozen=True)
class Attr:
    name: str
    value: Any


@dataclass(frozen=True)
class Comment:
    """Comment lines; each line of `text` is wrapped at COMMENT_WIDTH unless `wrap` is off."""

    text: str
    wrap: bool = True

    def lines(self, indent: str) -> list[str]:
        out: list[str] = []
        for line in self.text.splitlines() or [""]:
            # Indented lines (commands, code) are kept whole; list items wrap under their text.
            keep = not self.wrap or not line.strip() or line.startswith("  ")
            pieces = (
                [line]
                if keep
                else textwrap.wrap(
                    line,
                    COMMENT_WIDTH,
                    subsequent_indent="  " if line.startswith("- ") else "",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
            out += [f"{indent}# {piece}".rstrip() for piece in pieces or [""]]
        return out


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def quote(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    # Template sequences would be interpolated inside a quoted string: escape them by doubling.
    return '"' + out.replace("${", "$${").replace("%{", "%%{") + '"'


def _key(name: str) -> str:
    return name if _IDENT.match(name) else quote(name)


def _scalar(value: Any) -> str | None:
    if isinstance(value, Expr):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return quote(value)
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        parts = [_scalar(v) for v in value]
        if all(p is not None and "\n" not in p for p in parts):
            return "[" + ", ".join(p for p in parts if p is not None) + "]"
        return None
    if isinstance(value, Mapping) and not value:
        return "{}"
    return None


def _aligned(pairs: list[tuple[str, str]], indent: str) -> list[str]:
    width = max(len(k) for k, _ in pairs)
    return [f"{indent}{k.ljust(width)} = {v}" for k, v in pairs]


def _value_lines(value: Any, indent: str) -> list[str]:
    """A multi-line value (object or list of objects); the first line continues `name = `."""
    inner = indent + "  "
    if isinstance(value, Mapping):
        lines = ["{"]
        lines += _entries([(_key(str(k)), v) for k, v in value.items()], inner)
        return [*lines, indent + "}"]
    lines = ["["]
    for item in value:
        sub = _value_lines(item, inner) if _scalar(item) is None else [_scalar(item) or ""]
        sub[-1] += ","
        lines.append(inner + sub[0])
        lines += sub[1:]
    return [*lines, indent + "]"]


def _entries(items: list[tuple[str, Any]], indent: str) -> list[str]:
    """Attribute lines with `=` aligned over runs of single-line values, as `terraform fmt` does."""
    out: list[str] = []
    run: list[tuple[str, str]] = []
    for name, value in items:
        text = _scalar(value)
        if text is not None:
            run.append((name, text))
            continue
        if run:
            out += _aligned(run, indent)
            run = []
        lines = _value_lines(value, indent)
        out.append(f"{indent}{name} = {lines[0]}")
        out += lines[1:]
    if run:
        out += _aligned(run, indent)
    return out


def _block_lines(block: Block, indent: str) -> list[str]:
    head = " ".join([block.type, *(quote(label) for label in block.labels)])
    if not block.body:
        return [f"{indent}{head} {{}}"] if block.labels else [f"{indent}{head} {{", f"{indent}}}"]
    inner = indent + "  "
    lines = [f"{indent}{head} {{"]
    pending: list[tuple[str, Any]] = []
    previous = ""

    def flush() -> None:
        nonlocal previous
        if pending:
            lines.extend(_entries(pending, inner))
            pending.clear()
            previous = "attr"

    for item in block.body:
        if isinstance(item, Attr):
            if previous == "block":
                lines.append("")
            pending.append((item.name, item.value))
        elif isinstance(item, Comment):
            flush()
            lines += item.lines(inner)
            previous = "comment"
        else:
            flush()
            if previous in ("attr", "block"):
                lines.append("")
            lines += _block_lines(item, inner)
            previous = "block"
    flush()
    return [*lines, f"{indent}}}"]


def render_blocks(items: Iterable[Block | Comment]) -> str:
    """Top-level items separated by blank lines; a comment sticks to the block right after it."""
    out: list[str] = []
    previous: Block | Comment | None = None
    for item in items:
        if out and not (isinstance(previous, Comment) and isinstance(item, Block)):
            out.append("")
        out += item.lines("") if isinstance(item, Comment) else _block_lines(item, "")
        previous = item
    return "\n".join(out) + "\n"


def snippet(title: str, blocks: list[Block]) -> Comment:
    """HCL to merge by hand, commented out: `# ` before each line, between the snippet markers."""
    text = render_blocks(blocks).rstrip("\n")
    body = "\n".join(("  " + line) if line else "" for line in text.splitlines())
    return Comment(f"{SNIPPET_START} {title}\n{body}\n{SNIPPET_END}", wrap=False)


def extract_snippets(hcl: str) -> list[str]:
    """The HCL inside each snippet of an emitted file, uncommented (what a reader would paste)."""
    found: list[str] = []
    current: list[str] | None = None
    for line in hcl.splitlines():
        if line.startswith(f"# {SNIPPET_START}"):
            current = []
        elif line.startswith(f"# {SNIPPET_END}") and current is not None:
            found.append("\n".join(current) + "\n")
            current = None
        elif current is not None:
            current.append(line[4:] if line.startswith("#   ") else line.lstrip("#").strip())
    return found


def tf_name(text: str) -> str:
    """A Terraform resource name from an AZ, subnet id or pool name: letters, digits and underscores."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_") or "x"
    return name if name[0].isalpha() or name[0] == "_" else f"r_{name}"


def import_block(to: str, id_: str) -> Block:
    return Block("import").attr("to", Expr(to)).attr("id", id_)


def hcl_object(value: Mapping[str, Any]) -> str:
    """An inline HCL object for use inside a function call (single line)."""
    parts = []
    for k, v in value.items():
        text = hcl_object(v) if isinstance(v, Mapping) else _scalar(v)
        parts.append(f"{_key(str(k))} = {text}")
    return "{ " + ", ".join(parts) + " }" if parts else "{}"
