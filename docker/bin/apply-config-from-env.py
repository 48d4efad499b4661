#!/usr/bin/env python3
"""pulsar-chaos's own implementation of the official image's config convention.

Usage: bin/apply-config-from-env.py FILE [FILE ...]

For every environment variable PULSAR_PREFIX_<key>=<value>, <key> is set to <value> in each
FILE: the existing line is replaced, or a line is appended when the key is absent. A plain
environment variable named exactly like a key already in the file replaces that key too.
"""
import os
import sys

PREFIX = "PULSAR_PREFIX_"


def apply(path):
    with open(path) as f:
        lines = f.readlines()
    index = {}
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        index[stripped.split("=", 1)[0].strip()] = i
    updates = {}
    for name, value in os.environ.items():
        if name.startswith(PREFIX):
            updates[name[len(PREFIX):]] = value
    for name, value in os.environ.items():
        if name in index and name not in updates:
            updates[name] = value
    for key in sorted(updates):
        line = "%s=%s\n" % (key, updates[key])
        if key in index:
            lines[index[key]] = line
        else:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines.append(line)
        print("[%s] %s=%s" % (path, key, updates[key]))
    with open(path, "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: %s FILE [FILE ...]" % sys.argv[0], file=sys.stderr)
        sys.exit(1)
    for p in sys.argv[1:]:
        apply(p)
