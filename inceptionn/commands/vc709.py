"""`make vc709`: the Vivado build tree of the VC709 board self-test.

Writes build/vc709/ (top.v, top.xdc, top.tcl, build_top.sh, and with the engines
inceptionn_tx.v and inceptionn_rx.v, which top.v instantiates) for hw.selftest's
VC709SelfTestTop: frame generator -> TX engine -> RX engine -> checker at 250 MHz.
If AMARANTH_ENV_VIVADO names Vivado's settings script (settings64.sh), or --bitstream is
given with vivado on PATH, Vivado also runs and produces top.bit.
"""

import os
from pathlib import Path

from inceptionn.rtl import harness
from inceptionn.rtl.icarus import kick_time_zero

__all__ = ["build_tree", "add_arguments", "run"]

OUT = harness.BUILD / "vc709"


def build_tree(out=OUT, *, engines=True, do_build=False, pass_frames=1024, name="top",
               codec="bounded"):
    """Write (and with do_build run) the Vivado build; returns the BuildPlan/products.
    ``codec``: the TX engine's wire format version, "bounded" (3) or "paper" (1); RX
    accepts that version only."""
    from inceptionn.hw.platform import VC709Platform
    from inceptionn.hw.selftest import VC709SelfTestTop
    platform = VC709Platform()
    modules = None
    if engines:
        # The engines as their own modules, the shared conversions `make verilog` writes.
        from inceptionn.rtl.designs import engine_designs
        modules = tuple(module for module, _ in engine_designs())
        for module, factory in engine_designs():
            platform.add_file(f"{module}.v", kick_time_zero(harness.to_verilog(factory, module)))
    top = VC709SelfTestTop(engines=engines, pass_frames=pass_frames, codec=codec,
                           engine_modules=modules)
    plan = platform.build(top, name=name, build_dir=str(out), do_build=do_build,
                          emit_src=False)   # no source paths: the same tree gives the same files
    if not do_build:
        # Without Vivado, BuildPlan.extract writes the tree instead of running it.
        plan.extract(str(out))
    return plan


def add_arguments(ap) -> None:
    """`inceptionn vc709`'s options."""
    ap.add_argument("-o", "--out", type=Path, default=OUT)
    ap.add_argument("--bitstream", action="store_true",
                    help="run Vivado even without AMARANTH_ENV_VIVADO (vivado must be on PATH)")
    ap.add_argument("--no-engines", action="store_true",
                    help="self-test of the test: generator -> wire -> checker")
    ap.add_argument("--codec", choices=("paper", "bounded"), default="bounded",
                    help="the wire format version TX sends (RX accepts only it): bounded (3, default) or paper (1)")


def run(args) -> int:
    do_build = args.bitstream or bool(os.environ.get("AMARANTH_ENV_VIVADO"))
    engines = not args.no_engines
    build_tree(args.out, engines=engines, do_build=do_build, codec=args.codec)
    files = sorted(p.name for p in args.out.iterdir() if p.is_file())
    print(f"VC709 self-test ({'TX -> RX engines, ' + args.codec + ' codec' if engines else 'wire loop'})"
          f" in {args.out}:")
    for f in files:
        print(f"  {f}")
    if not do_build:
        print("Vivado not run (set AMARANTH_ENV_VIVADO to its settings64.sh to build top.bit); "
              f"by hand: cd {args.out} && sh build_top.sh")
    return 0
