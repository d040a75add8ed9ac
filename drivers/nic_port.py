"""One port of the software NIC: the TX engine on frames a host sends, the RX engine on
frames it receives, with the spec's counters and the misaligned-segment counter.

Engines: "golden" (the bit-exact model, golden.tx_frame / rx_frame) or "rtl" (the
Verilated CompressionEngine and DecompressionEngine in the compiled loop,
inceptionn/rtl/rtl_loop.py, one pair per port). The RTL's every output frame is checked against the
golden model; a difference raises RtlMismatch and stops the bridge: slow is fine, wrong
is not.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .. import golden
from .tcp_align import StreamOffsets

__all__ = ["ENGINES", "IMPLS", "NicPort", "PortStats", "RtlMismatch"]

ENGINES = ("golden", "rtl")
IMPLS = ("fast", "numpy")       # the golden engine's payload work: compiled or the NumPy model


class RtlMismatch(RuntimeError):
    """The Verilated engine's output differs from the golden model's."""


@dataclass
class PortStats:
    from_host_frames: int = 0
    from_host_bytes: int = 0
    to_wire_frames: int = 0
    to_wire_bytes: int = 0
    to_host_frames: int = 0
    to_host_bytes: int = 0
    lost: int = 0              # wire frames dropped by the lossy-wire option
    host_queue_drops: int = 0  # frames the receiving host's TAP had no room for
    host_errors: int = 0       # frames its TAP refused otherwise (EIO: the host's link is down)
    forged: int = 0            # frames from this host with another host's or a group source MAC
    mac_table_full: int = 0    # frames whose source MAC was not learned: the table was full
    flagged: int = 0           # frames the RX engine flagged bad (tuser)
    rtl_tx_frames: int = 0     # frames the RTL TX engine processed (golden confirmed each)
    rtl_rx_frames: int = 0     # frames the RTL RX engine processed (golden confirmed each)
    tx: golden.Counters = field(default_factory=golden.Counters)
    rx: golden.Counters = field(default_factory=golden.Counters)

    @property
    def wire_ratio(self) -> float:
        """Bytes the host sent over bytes this port put on the wire."""
        return self.from_host_bytes / self.to_wire_bytes if self.to_wire_bytes else 1.0


class NicPort:
    def __init__(self, index: int, *, k: int, dscp: int, engine: str = "golden",
                 enable: bool = True, impl: str = "fast", codec: str = golden.CODEC_DEFAULT,
                 version: int | None = None, versions=None):
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        self.codec = golden.check_codec(codec)
        # The wire version TX writes (the codec's: bounded 3, paper 1) and those RX accepts
        # (by default the one TX writes: version 3 only, or 1 for the paper's
        # reproductions, which name the paper's codec); the RTL engines implement all three.
        self.version = golden.payload.check_version(
            golden.CODEC_VERSION[self.codec] if version is None else version, self.codec)
        self.versions = golden.check_versions((self.version,) if versions is None else versions)
        # The golden engine's payload work: the compiled fast path (byte for byte the
        # NumPy model, tests/test_golden_fast.py) or the NumPy model itself. The RTL is
        # always checked against the NumPy model.
        self._codec = golden.fast.FAST if impl == "fast" and engine == "golden" else None
        if self._codec is not None:
            golden.fast.warm_up()
        self.index, self.k, self.dscp, self.enable = index, golden.check_k(k, codec), golden.check_dscp(dscp), enable
        self.engine = engine
        self.stats = PortStats()
        self.offsets = StreamOffsets()
        self._tx_rtl = self._rx_rtl = None
        if engine == "rtl":
            from ..rtl.rtl_loop import FastEngine
            self._tx_rtl = FastEngine("tx", k=k, dscp=dscp, enable=enable, codec=self.codec,
                                      version=max(self.version, 2))
            self._rx_rtl = FastEngine("rx", dscp=dscp, enable=enable, versions=self.versions)

    def to_wire(self, frames: list[bytes]) -> list[bytes]:
        """TX: frames a host sent -> frames on the wire (oversize frames are dropped)."""
        st = self.stats
        want = []
        for f in frames:
            st.from_host_frames += 1
            st.from_host_bytes += len(f)
            self.offsets.observe(f, self.dscp if self.enable else None)
            want.append(golden.tx_frame(f, k=self.k, dscp=self.dscp, enable=self.enable,
                                        counters=st.tx, impl=self._codec, codec=self.codec,
                                        version=self.version))
        if self._tx_rtl is not None:
            got = self._tx_rtl.run(frames)
            for i, (g, w) in enumerate(zip(got, want)):
                if (g[0] if g else None) != w or (g and g[1]):
                    raise RtlMismatch(f"port {self.index}: RTL TX differs from golden.tx_frame "
                                      f"on a {len(frames[i])}-byte frame")
            st.rtl_tx_frames += len(frames)
        out = [w for w in want if w is not None]
        st.to_wire_frames += len(out)
        st.to_wire_bytes += sum(map(len, out))
        return out

    def to_host(self, frames: list[bytes]) -> list[tuple[bytes, bool]]:
        """RX: frames off the wire -> (frame, bad) for the host (RX never drops)."""
        st = self.stats
        want = [golden.rx_frame(f, dscp=self.dscp, enable=self.enable, counters=st.rx,
                                impl=self._codec, versions=self.versions) for f in frames]
        if self._rx_rtl is not None:
            got = self._rx_rtl.run(frames)
            if got != [(f, bool(b)) for f, b in want]:
                raise RtlMismatch(f"port {self.index}: RTL RX differs from golden.rx_frame")
            st.rtl_rx_frames += len(frames)
        for f, bad in want:
            st.flagged += int(bad)
        return want

    def counters(self) -> dict:
        st = self.stats
        d = {k: v for k, v in asdict(st).items() if k not in ("tx", "rx")}
        d.update({f"tx_{k}": v for k, v in st.tx.as_dict().items()})
        d.update({f"rx_{k}": v for k, v in st.rx.as_dict().items()})
        d["wire_ratio"] = st.wire_ratio
        c = self.offsets.counts
        d.update(tagged_tcp_segments=c.tracked, misaligned=c.misaligned, untracked=c.untracked)
        return d

    def close(self):
        for eng in (self._tx_rtl, self._rx_rtl):
            if eng is not None:
                eng.close()
        self._tx_rtl = self._rx_rtl = None
