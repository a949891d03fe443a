"""A small strict parser of Prometheus' text exposition format (prometheus_client is not a dependency), for
the tests that read `-o prometheus` and the fleet's metrics back and check them value by value."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$")
_UNESCAPE = {"\\": "\\", '"': '"', "n": "\n"}


def parse_labels(text: str) -> Labels:
    """`{a="x",b="y\\"z"}` -> (("a", "x"), ("b", 'y"z')); raises on anything malformed."""
    assert text.startswith("{") and text.endswith("}"), text
    body, i, out = text[1:-1], 0, []
    while i < len(body):
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="', body[i:])
        assert m, body[i:]
        name, i = m.group(1), i + m.end()
        value = []
        while body[i] != '"':
            if body[i] == "\\":
                value.append(_UNESCAPE[body[i + 1]])  # KeyError: an escape the format does not allow
                i += 2
            else:
                assert body[i] != "\n"
                value.append(body[i])
                i += 1
        out.append((name, "".join(value)))
        i += 1
        if i < len(body):
            assert body[i] == ",", body[i:]
            i += 1
    return tuple(out)


@dataclass
class Parsed:
    help: dict[str, str] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)
    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)

    def value(self, metric: str, /, **labels: str) -> float:
        """The one sample of `metric` whose labels include `labels`."""
        found = [v for ls, v in self.samples[metric].items() if set(labels.items()) <= set(ls)]
        assert len(found) == 1, (metric, labels, found)
        return found[0]


def parse(text: str) -> Parsed:
    """Strict enough to catch what Prometheus rejects: families contiguous, HELP/TYPE before samples,
    no duplicate series, parsable values, trailing newline."""
    assert text.endswith("\n")
    out = Parsed()
    done: set[str] = set()
    current = ""
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert name not in out.help and name not in done, f"family {name} split"
            if current:
                done.add(current)
            current = name
            out.help[name] = help_text.replace("\\n", "\n").replace("\\\\", "\\")
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert name == current and kind == "gauge", line
            out.types[name] = kind
            continue
        m = _SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels, value = m.group(1), parse_labels(m.group(2) or "{}"), float(m.group(3))
        assert name == current and name in out.types, f"sample {name} outside its family"
        series = out.samples.setdefault(name, {})
        assert labels not in series, f"duplicate series {name}{labels}"
        series[labels] = value
    return out
