"""Tests' helper for `inceptionn nic bridge` run as its own process: read its start-up
output up to the first counters line, and the namespace holders' pids it names."""

import re


def wait_started(proc):
    """(lines read, holder pids) once the bridge printed its first counters."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("counters:"):
            break
    return lines, [int(m) for m in re.findall(r"/proc/(\d+)/ns/net", "".join(lines))]
