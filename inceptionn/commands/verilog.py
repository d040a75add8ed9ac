"""`make verilog`: the standalone engines as Verilog, under AXI-stream port names.

Writes build/verilog/inceptionn_tx.v (CompressionEngine) and inceptionn_rx.v
(DecompressionEngine), the engines of the registry (inceptionn/rtl/blocks.py), each the
engine wrapped by hw.axis.AxisTop, converted without source locations so that the same
tree gives the same bytes. Every file is then linted with ``verilator --lint-only -Wall``
and the waivers inceptionn.rtl.lint documents, each with its reason.
"""

from pathlib import Path

from inceptionn.rtl import harness
from inceptionn.rtl.blocks import BLOCKS, engines
from inceptionn.rtl.designs import engine_designs
from inceptionn.rtl.icarus import kick_time_zero
from inceptionn.rtl.lint import lint

__all__ = ["generate", "engine_factories", "blocks", "add_arguments", "run"]

OUT = harness.BUILD / "verilog"


def generate(design, name):
    """Verilog text of `design` (or a factory) as module `name`; reproducible. With the
    Icarus-only lines that start its combinational blocks at time zero (rtl/icarus.py:
    without them `iverilog -g2012`, cocotb's mode, leaves some outputs X)."""
    return kick_time_zero(harness.to_verilog(design, name))


def engine_factories():
    """[(name, factory)] of the two engines, each wrapped in AxisTop: the factories and
    names of inceptionn.rtl.designs, so that a conversion made for a testbench or the
    compiled loop is the one written here (harness.to_verilog's cache)."""
    return engine_designs()


def blocks():
    """(name, factory) of every synthesized block of the registry but the engines
    (inceptionn/rtl/blocks.py)."""
    from inceptionn.rtl.synthesis import design_factory
    return [(b.name, design_factory(b.module, b.cls, b.wrap))
            for b in BLOCKS if b.synth and not b.engine]


def add_arguments(ap) -> None:
    """`inceptionn verilog`'s options."""
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    ap.add_argument("--blocks", action="store_true",
                    help="also write each major block to <out>/blocks/")
    ap.add_argument("--no-lint", action="store_true", help="skip the Verilator lint")
    names = {kind: row.name for kind, row in engines().items()}
    ap.add_argument("--only", choices=tuple(names),
                    help=f"write one engine ({' or '.join(names.values())}), not both")


def run(args) -> int:
    only = engines()[args.only].name if args.only else None
    jobs = [(name, f, args.out) for name, f in engine_factories() if only in (None, name)]
    if args.blocks:
        jobs += [(name, f, args.out / "blocks") for name, f in blocks()]
    failed = 0
    for name, factory, out in jobs:
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{name}.v"
        path.write_text(generate(factory, name))
        line = f"{name:22s} {path}"
        if not args.no_lint:
            res = lint(path, name)
            line += f"  lint: {'clean' if res.ok else f'{len(res.errors)} warnings'}"
            if res.by_rule:
                line += " (waived: " + ", ".join(f"{k} {v}" for k, v in sorted(res.by_rule.items())) + ")"
            if not res.ok:
                failed += 1
                line += "\n    " + "\n    ".join(res.errors[:20])
        print(line, flush=True)
    return 1 if failed else 0
