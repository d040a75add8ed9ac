"""`inceptionn corundum --tree PATH`: installs the engines into a Corundum checkout as
its application block.

The install (what it writes, from which of the checkout's files) is
inceptionn.hw.corundum.install; this module is its command line.
"""

from pathlib import Path

from ..hw.corundum.install import APP, BOARDS, DESIGNS_100G, board_dir, install


def add_arguments(ap) -> None:
    ap.add_argument("--tree", required=True, type=Path, help="the root of a Corundum checkout")
    ap.add_argument("--board", default="NetFPGA_SUME",
                    help=f"the board folder to add a build to (supported: {', '.join(BOARDS)})")


def run(args) -> int:
    written = install(args.tree, args.board)
    print(f"INCEPTIONN installed into {args.tree} as Corundum app '{APP}' ({len(written)} files):")
    for rel in written:
        print(f"  {rel}")
    bdir = board_dir(args.board)
    print(f"Bitstream (Vivado): make -C {args.tree / bdir / f'fpga_app_{APP}'}")
    print(f"VC709 bitstream (Vivado): make -C {args.tree / 'fpga/mqnic/VC709/fpga' / f'fpga_app_{APP}'}")
    print(f"Corundum's {args.board} testbench with the app: "
          f"make -C {args.tree / bdir / f'tb/fpga_core_{APP}'} (cocotb 1.8, Icarus)")
    for design, builds in DESIGNS_100G.items():
        for ours in builds.values():
            print(f"100G bitstream (Vivado): make -C {args.tree / design / ours}")
        print(f"Corundum's 100G testbench with the app: "
              f"make -C {args.tree / design / f'tb/fpga_core_{APP}'} (cocotb 1.8, Icarus)")
    print(f"Corundum's template app testbench (512 bits) with the app: "
          f"make -C {args.tree / 'fpga/app' / APP / 'tb/mqnic_core_pcie_us'} (cocotb 1.8, Icarus)")
    return 0
