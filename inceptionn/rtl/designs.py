"""The engines as Verilator runs see them: module names, design factories, counter ports,
and the result of one run.

``DESIGNS``: kind -> (Verilog module name, design factory, function frames -> [bool: this
input frame comes out]) for "tx" and "rx", and "tx512" and "rx512": the engines at 512 bits
a beat (hw/engine_lanes.py: two lanes of each, instances of the 256-bit engines' modules). ``RunResult`` is what a batch of frames through
an engine returns, from the compiled loop (``rtl_loop.run_frames``) or from the cocotb
runner of the testbenches (sim/engines.py).
"""

from dataclasses import dataclass, field

from .blocks import block, engines

__all__ = ["COUNTER_NAMES", "DESIGNS", "RunResult", "normalize_frames", "tx_design",
           "rx_design", "tx_expected", "tx512_design", "rx512_design", "beat_bytes"]


# The engines' counter ports (spec section 6), as far as each engine has them.
COUNTER_NAMES = ("frames_in", "frames_out", "compressed", "decompressed", "bypassed",
                 "fallback", "malformed", "dropped", "payload_bytes_in", "payload_bytes_out",
                 "version1", "version2", "version3", "check_failed")


def tx_design():
    from ..hw.axis import AxisTop
    from ..hw.compression_engine import CompressionEngine
    return AxisTop(CompressionEngine())


def tx_expected(frames):
    from ..golden import MAX_FRAME_BYTES
    return [len(f) <= MAX_FRAME_BYTES for f, _ in frames]


def rx_design():
    from ..hw.axis import AxisTop
    from ..hw.decompression_engine import DecompressionEngine
    return AxisTop(DecompressionEngine())


# The engines' models are compiled at -O1, not the testbenches' default -O0: the same
# model serves the cocotb testbenches and the compiled loop (rtl_loop.py), which runs
# bulk traffic about 4x faster at -O1 (3,000 frames of 1514 bytes through RX: 0.67 s
# against 2.8 s) for about 1.5x the compile time, and one build of each engine instead
# of two.
tx_design.cxx_opt = "-O1"      # type: ignore[attr-defined]
rx_design.cxx_opt = "-O1"      # type: ignore[attr-defined]


def _rx_expected(frames):
    # RX never drops: every frame comes out (restored, flagged or unchanged).
    return [True] * len(frames)


def tx512_design():
    from ..hw.axis import AxisTop
    from ..hw.engine_lanes import CompressionEngineLanes
    return AxisTop(CompressionEngineLanes(512))


def rx512_design():
    from ..hw.axis import AxisTop
    from ..hw.engine_lanes import DecompressionEngineLanes
    return AxisTop(DecompressionEngineLanes(512))


# The lanes' top is small; the engines' modules come from their shared conversions
# (the harness adds a factory's `instances` to its build), compiled as the engines are.
tx512_design.instances = ((engines()["tx"].name, tx_design),)     # type: ignore[attr-defined]
rx512_design.instances = ((engines()["rx"].name, rx_design),)     # type: ignore[attr-defined]
tx512_design.cxx_opt = "-O1"      # type: ignore[attr-defined]
rx512_design.cxx_opt = "-O1"      # type: ignore[attr-defined]


def beat_bytes(kind):
    """Bytes a beat of engine ``kind`` ("tx", "rx512", ...)."""
    return 64 if kind.endswith("512") else 32


# kind -> (module name, design factory, frames -> [bool: this input frame comes out]).
# The names are `make verilog`'s, so that the testbenches, the compiled loop and the
# Verilog output share one conversion of each engine (harness.to_verilog's cache).
DESIGNS = {
    "tx": (engines()["tx"].name, tx_design, tx_expected),
    "rx": (engines()["rx"].name, rx_design, _rx_expected),
    "tx512": (block("inceptionn_tx512").name, tx512_design, tx_expected),
    "rx512": (block("inceptionn_rx512").name, rx512_design, _rx_expected),
}


@dataclass
class RunResult:
    frames_out: list
    cycles: int
    in_beats: int
    out_beats: int
    counters: dict
    latencies: list = field(default_factory=list)
    in_cycles: int = 0

    @property
    def latency(self):
        if not self.latencies:
            return (None, None)
        return (min(self.latencies), max(self.latencies))


def normalize_frames(frames):
    """(bytes, tuser) pairs from frames given as bytes or (bytes, tuser); empty is an error."""
    out = []
    for item in frames:
        frame, user = item if isinstance(item, tuple) else (item, False)
        frame = bytes(frame)
        if not frame:
            raise ValueError("frames must hold at least one byte")
        out.append((frame, bool(user)))
    return out
