"""The engines as Verilator runs see them: module names, design factories, counter ports,
and the result of one run.

``DESIGNS``: kind -> (Verilog module name, design factory, function frames -> [bool: this
input frame comes out]) for "tx" and "rx", and "tx512" and "rx512": the engines at 512 bits
a beat (hw/engine_lanes.py: two lanes of each, instances of the 256-bit engines' modules). ``RunResult`` is what a batch of frames through
an engine returns, from the compiled loop (``rtl_loop.run_frames``) or from the cocotb
runner of the testbenches (sim/engines.py).
"""

from dataclasses import dataclass, field

from .blocks import engines, lanes

__all__ = ["COUNTER_NAMES", "DESIGNS", "RunResult", "normalize_frames", "tx_design",
           "rx_design", "tx_expected", "tx512_design", "rx512_design", "beat_bytes",
           "engine_designs"]


# The engines' counter ports (spec section 6), as far as each engine has them.
COUNTER_NAMES = ("frames_in", "frames_out", "compressed", "decompressed", "bypassed",
                 "fallback", "malformed", "dropped", "payload_bytes_in", "payload_bytes_out",
                 "version1", "version2", "version3", "check_failed")


def _axis_top(kind):
    """The registry's engine (or lanes) of run kind ``kind`` in its AXI-stream top."""
    from ..hw.axis import AxisTop
    return AxisTop(_BY_KIND[kind].load()())


def tx_design():
    return _axis_top("tx")


def tx_expected(frames):
    from ..golden import MAX_FRAME_BYTES
    return [len(f) <= MAX_FRAME_BYTES for f, _ in frames]


def rx_design():
    return _axis_top("rx")


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
    # The lanes' class builds two lanes (512 bits a beat) by default.
    return _axis_top("tx512")


def rx512_design():
    return _axis_top("rx512")


# A factory per run kind: each its own function, as the Verilog cache keys a factory by
# its name (harness._design_key); what each builds comes from the registry.
_FACTORIES = {"tx": (tx_design, tx_expected), "rx": (rx_design, _rx_expected),
              "tx512": (tx512_design, tx_expected), "rx512": (rx512_design, _rx_expected)}
_BY_KIND = {**engines(), **lanes()}

# The lanes' top is small; the engines' modules come from their shared conversions
# (the harness adds a factory's `instances` to its build), compiled as the engines are.
for _kind, _row in lanes().items():
    _lanes = _FACTORIES[_kind][0]
    _lanes.instances = ((engines()[_row.lanes_of].name,       # type: ignore[attr-defined]
                         _FACTORIES[_row.lanes_of][0]),)
    _lanes.cxx_opt = "-O1"                                      # type: ignore[attr-defined]


def beat_bytes(kind):
    """Bytes a beat of engine ``kind`` ("tx", "rx512", ...)."""
    return 64 if kind.endswith("512") else 32


# kind -> (module name, design factory, frames -> [bool: this input frame comes out]).
# The names are `make verilog`'s, so that the testbenches, the compiled loop and the
# Verilog output share one conversion of each engine (harness.to_verilog's cache).
DESIGNS = {kind: (row.name, *_FACTORIES[kind]) for kind, row in _BY_KIND.items()}


def engine_designs():
    """[(module name, design factory)] of the two engines, TX first: what the Corundum
    app, the VC709 self-test and `inceptionn verilog` instantiate or write."""
    return [(row.name, _FACTORIES[kind][0]) for kind, row in engines().items()]


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
