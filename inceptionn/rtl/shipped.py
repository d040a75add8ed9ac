"""The engines' Verilog as the repository ships it: hw/verilog/<module>.v, each exactly
what `harness.to_verilog` makes of the engine's factory, and hw/verilog/keys.json, the
key (harness._design_key: the factory and every HDL source) each was converted from.

Why: converting the two engines takes about 16 CPU-s each (Amaranth's netlist in Python,
then yosys) and amaranth's yosys another 12 to start on a machine's first use; a fresh
clone's `make demo` and `make test` spent that before their first RTL frame. Builds now
read the shipped text where its key is the sources' own, and convert as before where it
is not (a changed hw/ tree: slower, never wrong). `make test` fails while the keys are
stale and `make test-long` converts afresh and compares byte for byte.

Refresh after a change to hw/ (or the engines' factories): `make shipped-verilog`, or
`python -m inceptionn.rtl.shipped`; then commit hw/verilog/.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from . import harness
from .designs import engine_designs

__all__ = ["SHIPPED", "shipped_designs", "stale", "refresh"]

SHIPPED = harness.SHIPPED


def shipped_designs():
    """[(module name, factory)] of what hw/verilog/ holds: the two engines."""
    return engine_designs()


def _keys(folder: Path) -> dict:
    try:
        return json.loads((folder / "keys.json").read_text())
    except (OSError, ValueError):
        return {}


def stale(folder: Path = SHIPPED) -> list[str]:
    """Module names whose shipped Verilog is missing or was converted from other sources."""
    keys = _keys(folder)
    return [name for name, factory in shipped_designs()
            if keys.get(name) != harness._design_key(factory, name)
            or not (folder / f"{name}.v").is_file()]


def refresh(folder: Path = SHIPPED) -> list[Path]:
    """Convert every shipped design afresh (no cache) and write it with its key."""
    folder.mkdir(parents=True, exist_ok=True)
    keys, written = {}, []
    for name, factory in shipped_designs():
        path = folder / f"{name}.v"
        path.write_text(harness.convert_uncached(factory, name))
        keys[name] = harness._design_key(factory, name)
        written.append(path)
    (folder / "keys.json").write_text(json.dumps(keys, indent=1, sort_keys=True) + "\n")
    return written


if __name__ == "__main__":
    for p in refresh():
        print(f"wrote {p}")
    sys.exit(0)
