"""Per-engine counters (spec section 5); the RTL keeps frames in 32 bits, bytes in 48."""

from dataclasses import asdict, dataclass

from .wire import MAX_FRAME_BYTES

__all__ = ["Counters", "MAX_FRAME_BYTES", "FRAME_COUNTER_BITS", "BYTE_COUNTER_BITS"]

FRAME_COUNTER_BITS = 32
BYTE_COUNTER_BITS = 48


@dataclass
class Counters:
    """What one engine has seen; tx_frame/rx_frame add to it."""
    frames_in: int = 0
    frames_out: int = 0
    compressed: int = 0          # TX frames rewritten with a compressed payload
    decompressed: int = 0        # RX frames restored (malformed ones included)
    bypassed: int = 0            # forwarded unchanged: not eligible, disabled, tuser (TX), shim rejected (RX)
    fallback: int = 0            # TX eligible but |C| >= L: sent with DSCP 0
    malformed: int = 0           # RX groups ran out or bytes left over
    dropped: int = 0             # TX frames longer than MAX_FRAME_BYTES
    payload_bytes_in: int = 0    # L4 payload bytes into compressed/decompressed frames
    payload_bytes_out: int = 0   # ... and out of them
    version1: int = 0            # of compressed (TX) / decompressed (RX): wire version 1 (paper's codec)
    version2: int = 0            # ... wire version 2 (bounded codec)
    version3: int = 0            # ... wire version 3 (bounded codec, checked shim)
    check_failed: int = 0        # RX: of bypassed, version-3 shims whose check word did not match

    def as_dict(self):
        """Counter name -> value."""
        return asdict(self)
