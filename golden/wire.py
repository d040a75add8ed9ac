"""Wire-format constants (docs/wire-format.md): golden's single home for them.

hw/wire.py holds the gateware's copy (golden/ must not import the gateware);
tests/test_wire_constants.py checks that both agree name by name.
"""

__all__ = [
    "BEAT_BYTES", "BEAT_BITS", "MAX_FRAME_BYTES", "MAX_FRAME_BEATS",
    "SHIM_MAGIC", "SHIM_BYTES", "DSCP_DEFAULT", "TOS_DEFAULT", "K_MIN", "K_MAX", "K_DEFAULT",
    "GROUP_VALUES", "MAX_PAYLOAD", "SHIM_MAGIC_V1", "SHIM_MAGIC_V2", "EB_K_MIN", "EB_K_MAX",
    "CODECS", "CODEC_DEFAULT", "CODEC_MAGIC", "MAGIC_CODEC",
]

BEAT_BYTES = 32                                  # one 256-bit AXI-stream beat
BEAT_BITS = 8 * BEAT_BYTES
MAX_FRAME_BYTES = 9216                           # >= 9022: a 9000-byte MTU jumbo frame with a VLAN tag
MAX_FRAME_BEATS = MAX_FRAME_BYTES // BEAT_BYTES  # 288
SHIM_MAGIC = 0xC5                                # byte 2 of the 4-byte shim: magic and format version 1
SHIM_MAGIC_V1 = SHIM_MAGIC                       # version 1: the paper's codec
SHIM_MAGIC_V2 = 0xC6                             # version 2: the bounded codec (inceptionn_eb); byte 3 = k
SHIM_BYTES = 4
DSCP_DEFAULT = 10                                # the paper's tag, reserved network-wide
TOS_DEFAULT = DSCP_DEFAULT << 2                  # the IPv4 ToS byte: 0x28 (ECN 00)
K_MIN, K_MAX, K_DEFAULT = 1, 126, 10             # error bound 2^-k (version 1, the paper's codec)
EB_K_MIN, EB_K_MAX = 1, 16                       # version 2: the bound |error| <= 2^-k holds up to 16
GROUP_VALUES = 8                                 # values per group (one 16-bit tag word)
MAX_PAYLOAD = 0xFFFF                             # the shim holds L in 16 bits

# The two value codecs by name: "paper" (wire version 1) and "bounded" (wire version 2).
# Where a user does not choose, the bounded codec is used; the block-level model
# functions that mirror the version-1 blocks keep the paper's as their default.
CODECS = ("paper", "bounded")
CODEC_DEFAULT = "bounded"
CODEC_MAGIC = {"paper": SHIM_MAGIC_V1, "bounded": SHIM_MAGIC_V2}
MAGIC_CODEC = {v: c for c, v in CODEC_MAGIC.items()}
