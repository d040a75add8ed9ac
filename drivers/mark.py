"""Tag the traffic of programs you cannot change: nftables rules that set the DSCP of
every TCP and UDP packet to or from a port range, so the NIC compresses it.

This is only safe for streams that carry nothing but float32 from their first byte, in
whole floats: the NIC compresses every 4 payload bytes of a tagged segment as a float,
so a length prefix, a header or a pickle on such a port is silently changed (an integer
above the error bound keeps its bits only by luck). And the program's writes and MSS
decide the segment boundaries, so the rules of docs/host-contract.md apply to it too;
the bridge's misaligned counter is how to check. Prefer `gradient_socket()` where the
code can be changed.

The rules live in their own table (`inet inceptionn`), on the output hook at mangle
priority, one rule per range and direction, each carrying a comment that names it, so
`delete` and `listing` never touch anything else. Needs root and the `nft` command.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass

from .. import golden

__all__ = ["Mark", "MarkError", "parse_ports", "add", "delete", "listing", "TABLE"]

TABLE = "inceptionn"
_CHAIN = "tag"
_COMMENT = re.compile(r"^inceptionn (\d+)-(\d+) dscp (\d+) (dport|sport)$")


class MarkError(RuntimeError):
    """nft is missing or refused the rules."""


@dataclass(frozen=True)
class Mark:
    first: int
    last: int
    dscp: int

    def __str__(self):
        return f"ports {self.first}-{self.last} -> DSCP {self.dscp} (ToS {self.dscp << 2:#04x})"


def parse_ports(text) -> tuple[int, int]:
    """'5000' or '5000-5100' -> (first, last)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", str(text))
    if not m:
        raise ValueError(f"ports must look like 5000 or 5000-5100, got {text!r}")
    first, last = int(m.group(1)), int(m.group(2) or m.group(1))
    if not 1 <= first <= last <= 65535:
        raise ValueError(f"port range must be within 1..65535 and ordered, got {text!r}")
    return first, last


def _nft(args, *, input_text=None):
    nft = shutil.which("nft")
    if nft is None:
        raise MarkError("the nft command is not installed (Debian: apt-get install nftables; "
                        "`make setup` does it as root)")
    res = subprocess.run([nft, *args], input=input_text, capture_output=True,
                         text=True)
    if res.returncode != 0:
        raise MarkError(f"nft {' '.join(args)}: {res.stderr.strip() or 'failed'}")
    return res.stdout


def add(ports, dscp: int = golden.DSCP_DEFAULT) -> Mark:
    """Set DSCP `dscp` on TCP and UDP packets this host sends to or from `ports`."""
    first, last = parse_ports(ports) if not isinstance(ports, tuple) else ports
    dscp = golden.check_dscp(dscp)
    mark = Mark(first, last, dscp)
    if mark in listing():
        return mark
    rules = [f"table inet {TABLE} {{",
             f"  chain {_CHAIN} {{ type filter hook output priority mangle; policy accept; }}",
             "}"]
    for field in ("dport", "sport"):
        rules.append(f"add rule inet {TABLE} {_CHAIN} meta nfproto ipv4 meta l4proto {{ tcp, udp }} "
                     f"th {field} {first}-{last} ip dscp set {dscp} "
                     f"comment \"inceptionn {first}-{last} dscp {dscp} {field}\"")
    _nft(["-f", "-"], input_text="\n".join(rules) + "\n")
    return mark


def _rules():
    try:
        out = _nft(["-j", "list", "table", "inet", TABLE])
    except MarkError as e:
        if "No such file or directory" in str(e):
            return []
        raise
    rules = []
    for item in json.loads(out).get("nftables", []):
        rule = item.get("rule")
        if rule and (m := _COMMENT.match(rule.get("comment", ""))):
            rules.append((rule["handle"], Mark(int(m[1]), int(m[2]), int(m[3]))))
    return rules


def listing() -> list[Mark]:
    """The port ranges this host tags, one entry each."""
    seen = []
    for _, mark in _rules():
        if mark not in seen:
            seen.append(mark)
    return seen


def delete(ports=None) -> list[Mark]:
    """Remove the rules for `ports` (all of ours if None); returns what was removed."""
    want = None if ports is None else (parse_ports(ports) if not isinstance(ports, tuple) else ports)
    removed = []
    for handle, mark in _rules():
        if want is None or (mark.first, mark.last) == want:
            _nft(["delete", "rule", "inet", TABLE, _CHAIN, "handle", str(handle)])
            if mark not in removed:
                removed.append(mark)
    if want is not None and not removed:
        raise MarkError(f"no inceptionn mark for ports {want[0]}-{want[1]}")
    _drop_if_empty()
    return removed


def _drop_if_empty():
    """Remove our chain once it holds no rule, and the table once it holds nothing else:
    rules, chains or sets someone else put there stay."""
    try:
        items = json.loads(_nft(["-j", "list", "table", "inet", TABLE])).get("nftables", [])
    except MarkError as e:
        if "No such file or directory" in str(e):
            return
        raise
    objects = [(kind, body) for item in items for kind, body in item.items()
               if kind not in ("metainfo", "table")]
    ours_empty = not any(kind == "rule" and body.get("chain") == _CHAIN for kind, body in objects)
    others = [o for o in objects if not (o[0] == "chain" and o[1].get("name") == _CHAIN)]
    if not others:
        _nft(["delete", "table", "inet", TABLE])
    elif ours_empty and any(kind == "chain" and body.get("name") == _CHAIN for kind, body in objects):
        _nft(["delete", "chain", "inet", TABLE, _CHAIN])
