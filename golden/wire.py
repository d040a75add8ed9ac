"""Wire-format constants (docs/wire-format.md): golden's single home for them.

hw/wire.py holds the gateware's copy (golden/ must not import the gateware);
tests/test_wire_constants.py checks that both agree name by name.
"""

__all__ = [
    "BEAT_BYTES", "BEAT_BITS", "MAX_FRAME_BYTES", "MAX_FRAME_BEATS",
    "SHIM_MAGIC", "SHIM_BYTES", "DEFAULT_DSCP", "K_MIN", "K_MAX", "K_DEFAULT",
    "GROUP_VALUES", "MAX_PAYLOAD",
]

BEAT_BYTES = 32                                  # one 256-bit AXI-stream beat
BEAT_BITS = 8 * BEAT_BYTES
MAX_FRAME_BYTES = 9216                           # >= 9022: a 9000-byte MTU jumbo frame with a VLAN tag
MAX_FRAME_BEATS = MAX_FRAME_BYTES // BEAT_BYTES  # 288
SHIM_MAGIC = 0xC5                                # byte 2 of the 4-byte shim: magic and format version 1
SHIM_BYTES = 4
DEFAULT_DSCP = 10                                # ToS 0x28, the paper's tag
K_MIN, K_MAX, K_DEFAULT = 1, 126, 10             # error bound 2^-k
GROUP_VALUES = 8                                 # values per group (one 16-bit tag word)
MAX_PAYLOAD = 0xFFFF                             # the shim holds L in 16 bits
