#!/usr/bin/env python3
"""Parses Prometheus text exposition (format 0.0.4) strictly and prints its samples as JSON.

    check_metrics.py FILE > samples.json

Every line must be a HELP line, a TYPE line or a sample; a sample must follow the HELP and TYPE
lines of its own family (deepcee_ names, counters ending in _total); label values must be
escaped; each series may appear once. Any other line is an error naming its number: exit 1.
Output: {"families": {name: type}, "samples": [[name, {label: value}, number], ...]}."""
import json
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
HELP = re.compile(rf"^# HELP ({NAME}) (.*)$")
TYPE = re.compile(rf"^# TYPE ({NAME}) (counter|gauge|histogram|summary|untyped)$")
SAMPLE = re.compile(rf"^({NAME})(?:\{{(.*)\}})? (\S+)(?: (-?\d+))?$")
NUMBER = re.compile(r"^(NaN|[+-]Inf|[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)$")


def fail(n, line, why):
    sys.exit(f"line {n}: {why}: {line!r}")


def labels_of(text, n, line):
    """Label pairs name="value" separated by commas, values with \\\\, \\" and \\n only."""
    labels, i = {}, 0
    while i < len(text):
        m = re.compile(rf'({LABEL})="').match(text, i)
        if not m:
            fail(n, line, f"bad label at {i}")
        name, i, value = m.group(1), m.end(), []
        while True:
            if i >= len(text):
                fail(n, line, "unterminated label value")
            c = text[i]
            if c == "\\":
                escaped = text[i + 1 : i + 2]
                if escaped not in ("\\", '"', "n"):
                    fail(n, line, f"bad escape \\{escaped}")
                value.append("\n" if escaped == "n" else escaped)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                fail(n, line, "newline in a label value")
            else:
                value.append(c)
                i += 1
        if name in labels:
            fail(n, line, f"label {name} twice")
        labels[name] = "".join(value)
        if i < len(text):
            if text[i] != ",":
                fail(n, line, f"expected , at {i}")
            i += 1
    return labels


def parse(text):
    if not text.endswith("\n"):
        sys.exit("the exposition does not end with a newline")
    families, helps, samples, series = {}, set(), [], set()
    current = None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        if m := HELP.match(line):
            name = m.group(1)
            if name in helps:
                fail(n, line, "a second HELP for the family")
            helps.add(name)
            current = name
            continue
        if m := TYPE.match(line):
            name, kind = m.groups()
            if name != current or name in families:
                fail(n, line, "TYPE not right after its family's HELP")
            if (kind == "counter") != name.endswith("_total"):
                fail(n, line, "counters, and only they, end in _total")
            families[name] = kind
            continue
        if line.startswith("#") or not line:
            fail(n, line, "neither HELP, TYPE nor a sample")
        m = SAMPLE.match(line)
        if not m:
            fail(n, line, "malformed sample")
        name, label_text, value = m.group(1), m.group(2), m.group(3)
        if name != current or name not in families:
            fail(n, line, "sample outside its family")
        if not name.startswith("deepcee_"):
            fail(n, line, "name without the deepcee_ prefix")
        if not NUMBER.match(value):
            fail(n, line, "value is not a number")
        labels = labels_of(label_text, n, line) if label_text else {}
        key = (name, tuple(sorted(labels.items())))
        if key in series:
            fail(n, line, "series twice")
        series.add(key)
        number = float(value.replace("Inf", "inf"))
        if families[name] == "counter" and (math.isnan(number) or number < 0):
            fail(n, line, "a counter below zero")
        samples.append([name, labels, number])
    return {"families": families, "samples": samples}


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        print(json.dumps(parse(f.read())))
