"""The registry of hardware blocks (hw/): one row per block, read by `inceptionn verilog`,
`inceptionn synth`, the RTL runner (inceptionn/rtl/designs.py) and the simulation harness
(sim/engines.py), so that a new block is one row here (docs/architecture.md).

Each row names the block's module under `inceptionn.hw` and its class, the Verilog
module it is written as, where it is tested (its own cocotb testbench in sim/, formal
checks in tests/formal/, or the enclosing block's testbench for a stage checked inside
it), and whether `make synth-report` synthesizes it (wrapped in an AXI-stream top where
its ports are streams). `SUPPORT` lists the hw modules that are not blocks (constants,
shared helpers, platforms), each with where it is exercised; tests/test_blocks.py checks
that every hw module is in one or the other and that every named test file exists. It
imports nothing of hw/ (Amaranth) until a class is asked for (``Block.load``), so that what
only runs the engines' Verilog can read it.

The engines are named here and nowhere else: their rows carry a ``kind`` ("tx", "rx";
their 512-bit lanes "tx512", "rx512"), and synthesis, `inceptionn verilog`, the
architecture pages, the Corundum app, the VC709 self-test and the testbenches read the
engines' modules, classes and Verilog names through ``engines()``, ``engine_classes()``
and ``lanes()`` (tests/test_engine_registry.py fails on a second list).
"""

import importlib
from dataclasses import dataclass

__all__ = ["Block", "BLOCKS", "SUPPORT", "block", "engines", "engine_classes", "lanes"]


@dataclass(frozen=True)
class Block:
    name: str                   # the Verilog module and report name
    module: str                 # under inceptionn.hw
    cls: str
    testbench: tuple = ()       # sim/ files that simulate it (its own, or the enclosing one)
    formal: tuple = ()          # tests/formal/ files that check it
    synth: bool = True          # a row of make synth-report
    wrap: bool = False          # synthesized inside an AXI-stream top (AxisTop)
    engine: bool = False        # one of the two engines (whole-engine runs, Verilog shared)
    kind: str = ""              # a whole engine's run kind ("tx", "rx", "tx512", "rx512")
    lanes_of: str = ""          # for lanes: the kind of the engine they are instances of

    def load(self):
        """The block's class (imports inceptionn.hw, so Amaranth)."""
        return getattr(importlib.import_module(f"inceptionn.hw.{self.module}"), self.cls)


_TX_SIM = ("sim/test_compression_engine.py",)
_RX_SIM = ("sim/test_decompression_engine.py",)
_TX_F = ("tests/formal/test_formal_tx_stages.py", "tests/formal/test_formal_tx_liveness.py")
_RX_F = ("tests/formal/test_formal_rx_stages.py", "tests/formal/test_formal_liveness.py")

BLOCKS = [
    # The engines.
    Block("inceptionn_tx", "compression_engine", "CompressionEngine",
          _TX_SIM + ("sim/test_loopback.py",), ("tests/formal/test_formal_engines.py",),
          wrap=True, engine=True, kind="tx"),
    Block("inceptionn_rx", "decompression_engine", "DecompressionEngine",
          _RX_SIM + ("sim/test_loopback.py",), ("tests/formal/test_formal_engines.py",),
          wrap=True, engine=True, kind="rx"),
    # The engines at 512 bits a beat: two lanes of each, instances of the engines' modules
    # (hw/engine_lanes.py); synthesized for UltraScale+ by `make synth-report`'s lane rows.
    Block("inceptionn_tx512", "engine_lanes", "CompressionEngineLanes",
          ("sim/test_engine_lanes.py",), ("tests/formal/test_formal_lanes.py",), synth=False,
          wrap=True, kind="tx512", lanes_of="tx"),
    Block("inceptionn_rx512", "engine_lanes", "DecompressionEngineLanes",
          ("sim/test_engine_lanes.py",), ("tests/formal/test_formal_lanes.py",), synth=False,
          wrap=True, kind="rx512", lanes_of="rx"),
    # TX for one-beat frames at 512 bits, a frame a clock (hw/short_frame.py): the TX
    # lanes' third path; checked against golden in Amaranth's simulator
    # (tests/test_short_frame.py) and inside the lanes.
    Block("short_frame_engine", "short_frame", "ShortFrameEngine",
          ("sim/test_engine_lanes.py", "tests/test_short_frame.py"),
          ("tests/formal/test_formal_lanes.py",), wrap=True),
    # The paper's blocks (Section VI, Figs. 9 and 10).
    Block("compression_block", "compression_block", "CompressionBlock",
          ("sim/test_compression_block.py",)),
    Block("shifter_tree", "shifter_tree", "ShifterTree", ("sim/test_shifter_tree.py",)),
    Block("compression_unit", "compression_unit", "CompressionUnit",
          ("sim/test_compression_unit.py",), ("tests/formal/test_formal_tx_liveness.py",)),
    Block("alignment_unit", "alignment_unit", "AlignmentUnit", ("sim/test_alignment_unit.py",),
          ("tests/formal/test_formal_tx_liveness.py",)),
    Block("packet_matcher", "packet_matcher", "PacketMatcher", ("sim/test_packet_matcher.py",),
          _TX_F[:1] + _RX_F[:1]),
    Block("tag_decoder", "tag_decoder", "TagDecoder", ("sim/test_tag_decoder.py",)),
    Block("decompression_block", "decompression_block", "DecompressionBlock",
          ("sim/test_decompression_block.py",)),
    Block("burst_buffer", "burst_buffer", "BurstBuffer", ("sim/test_burst_buffer.py",)),
    Block("decompression_unit", "decompression_unit", "DecompressionUnit",
          ("sim/test_decompression_unit.py",), ("tests/formal/test_formal_liveness.py",)),
    # The engines' other shared blocks.
    Block("checksum", "checksum", "Checksum", _TX_SIM + _RX_SIM),
    Block("realigner", "realigner", "Realigner", ("sim/test_realigner.py",),
          ("tests/formal/test_formal_liveness.py",)),
    Block("header_restore", "header_restore", "HeaderRestore", _RX_SIM),
    Block("header_rewrite", "header_rewrite", "HeaderRewrite", _TX_SIM, synth=False),
    Block("frame_store", "frame_store", "FrameStore", _TX_SIM,
          ("tests/formal/test_store_depth.py",), synth=False),
    Block("shim_check", "shim_check", "ShimCheck", _RX_SIM + _TX_SIM, synth=False),
    Block("axis_register_slice", "primitives", "AxisRegisterSlice",
          ("sim/test_axis_register_slice.py",), ("tests/formal/test_formal_fifos.py",), wrap=True),
    # TX stages (hw/tx/), each a wiring.Component of the engine's Pipeline.
    Block("tx_ingress", "tx.ingress", "Ingress", _TX_SIM, _TX_F, synth=False),
    Block("tx_dispatcher", "tx.dispatcher", "Dispatcher", ("sim/test_tx_dispatcher.py",), _TX_F,
          synth=False),
    Block("tx_front", "tx.front", "Front", _TX_SIM, _TX_F, synth=False),
    Block("tx_group_former", "tx.group_former", "GroupFormer", _TX_SIM, _TX_F[1:], synth=False),
    Block("tx_comp_writer", "tx.comp_writer", "CompWriter", _TX_SIM, _TX_F[1:], synth=False),
    Block("tx_feeder", "tx.feeder", "Feeder", ("sim/test_tx_feeder.py",), _TX_F, synth=False),
    Block("tx_finisher", "tx.finisher", "Finisher", ("sim/test_tx_finisher.py",), _TX_F,
          synth=False),
    Block("tx_egress", "tx.egress", "Egress", ("sim/test_tx_egress.py",), _TX_F, synth=False),
    # RX stages (hw/rx/).
    Block("rx_ingress", "rx.ingress", "Ingress", _RX_SIM, _RX_F[:1], synth=False),
    Block("rx_hold", "rx.hold", "Hold", ("sim/test_rx_hold.py",), _RX_F[:1], synth=False),
    Block("rx_check", "rx.check", "Check", _RX_SIM + ("sim/test_rx_front.py",), synth=False),
    Block("rx_front", "rx.front", "Front", ("sim/test_rx_front.py",), _RX_F, synth=False),
    Block("rx_feed", "rx.feed", "Feed", ("sim/test_rx_feed.py",), _RX_F, synth=False),
    Block("rx_words", "rx.words", "Words", _RX_SIM, synth=False),
    Block("rx_back", "rx.back", "Back", ("sim/test_rx_back.py",), _RX_F, synth=False),
    Block("rx_egress", "rx.egress", "Egress", ("sim/test_rx_egress.py",), _RX_F[:1], synth=False),
    # The VC709 board self-test's own logic (hw/selftest*.py).
    Block("selftest_generator", "selftest_gen", "FrameGenerator", ("sim/test_selftest.py",)),
    Block("selftest_reference", "selftest_gen", "ReferenceGenerator", ("sim/test_selftest.py",)),
    Block("selftest_checker", "selftest_check", "Checker", ("sim/test_selftest.py",)),
    Block("selftest", "selftest", "SelfTest", ("sim/test_selftest.py",), synth=False),
    # Corundum's application block (hw/corundum/): the Verilator testbench of the
    # generated app; its parts are synthesized through hw/corundum/synth_tops.py.
    Block("mqnic_app_block", "corundum.app", "InceptionnApp", ("sim/test_corundum_app.py",),
          synth=False),
]

# hw modules that are not blocks of their own: what they are, and which tests use them.
SUPPORT = {
    "wire": "wire-format constants (tests/test_wire_constants.py against golden/wire.py)",
    "axis": "AXI-stream payloads and the AxisTop wrapper (every engine testbench)",
    "primitives": "FIFOs, selects, register slices (tests/formal/test_formal_fifos.py)",
    "pipeline": "the engines' stage pipeline and its diagrams (tests/test_architecture.py)",
    "lane_bypass": "the lanes' bypass test, RX's (tests/test_lane_bypass.py against golden)",
    "engine_instance": "an engine as an instance of its shared module (sim/test_corundum_app.py; "
                       "sim/test_loopback.py under make sim-stress)",
    "tx.layouts": "TX stage payload layouts (the TX stage testbenches)",
    "rx.layouts": "RX stage payload layouts (the RX stage testbenches)",
    "platform.vc709": "the VC709 platform (tests/test_vc709.py)",
    "corundum.width": "the app's width adapters (tests/test_corundum_blocks.py)",
    "corundum.engine_path": "an interface's engine path in the app (tests/test_corundum_blocks.py)",
    "corundum.regs": "the app's register file (tests/test_corundum_blocks.py)",
    "corundum.regmap": "the app's register map (tests/test_corundum_blocks.py)",
    "corundum.shell": "the app's Verilog shell (sim/test_corundum_app.py)",
    "corundum.shell_ports": "Corundum's app port list (tests/test_corundum_cli.py)",
    "corundum.synth_tops": "synthesis tops of the app's parts (tests/test_synth.py)",
    "corundum.vc709_pins": "the VC709 board's pins (tests/test_corundum_vc709.py)",
    "corundum.vc709_board": "the VC709 Corundum board folder (tests/test_corundum_vc709.py)",
    "corundum.install": "the install into a Corundum checkout (tests/test_corundum_cli.py, "
                        "tests/test_corundum_tree.py)",
    "corundum.corundum_tests": "the tests run in a Corundum checkout (tests/test_corundum_tree.py)",
}


def block(name):
    """The row named `name`."""
    for b in BLOCKS:
        if b.name == name:
            return b
    raise KeyError(f"no block {name!r}; known: {', '.join(b.name for b in BLOCKS)}")


def engines():
    """{"tx": row, "rx": row}: the two engines, TX first (the register map's order)."""
    return {b.kind: b for b in BLOCKS if b.engine}


def engine_classes():
    """{"tx": CompressionEngine, "rx": DecompressionEngine} (imports the gateware)."""
    return {kind: b.load() for kind, b in engines().items()}


def lanes():
    """{"tx512": row, "rx512": row}: the engines at 512 bits a beat, lanes of the engines."""
    return {b.kind: b for b in BLOCKS if b.lanes_of}
