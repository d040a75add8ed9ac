"""Wire-format constants the engines are built around (spec: wire-format.md).

golden/ keeps its own copy of each (it must not import the gateware); a test checks
that both agree.
"""

__all__ = [
    "BEAT_BYTES", "BEAT_BITS", "MAX_FRAME_BYTES", "MAX_FRAME_BEATS",
    "SHIM_MAGIC", "SHIM_MAGIC_V2", "SHIM_BYTES", "DSCP_DEFAULT", "K_MIN", "K_MAX", "K_DEFAULT",
    "EB_K_MAX", "SHIM_MAGIC_V3", "SHIM_BYTES_V3", "TOS_DEFAULT",
]

BEAT_BYTES = 32                                  # one 256-bit AXI-stream beat
BEAT_BITS = 8 * BEAT_BYTES
MAX_FRAME_BYTES = 9216                           # longer frames are dropped (TX) / passed (RX)
MAX_FRAME_BEATS = MAX_FRAME_BYTES // BEAT_BYTES  # 288
SHIM_MAGIC = 0xC5                                # byte 2 of the 4-byte shim: version 1
SHIM_MAGIC_V2 = 0xC6                             # version 2: the bounded codec
SHIM_MAGIC_V3 = 0xC7                             # version 3: the bounded codec and a check word
SHIM_BYTES = 4
SHIM_BYTES_V3 = 8                                # version 3: the shim and its check word
DSCP_DEFAULT = 10                                # the paper's tag
TOS_DEFAULT = DSCP_DEFAULT << 2                  # the IPv4 ToS byte: 0x28 (ECN 00)
# A neighbouring DSCP the engines must leave alone (gateware only: the self-test's
# ineligible frames).
TOS_OTHER = (DSCP_DEFAULT + 1) << 2              # 0x2C
K_MIN, K_MAX, K_DEFAULT = 1, 126, 10             # error bound 2^-k (version 1)
EB_K_MAX = 16                                    # version 2's k: K_MIN..EB_K_MAX
# The engines' codec select, a 1-bit port (gateware only, so not in __all__: golden
# names the codecs "paper" and "bounded"): 0 version 1, the paper's codec; 1 version 2.
CODEC_PORT_PAPER, CODEC_PORT_BOUNDED = 0, 1
CODEC_PORT_DEFAULT = CODEC_PORT_BOUNDED          # where a user does not choose
# TX ``version`` port (gateware only, like the codec port): the wire version written with
# the bounded codec (2 or 3; other values bypass); RX ``versions`` port: the accepted
# versions, bit v - 1 for version v (golden.versions_mask).
VERSION_DEFAULT = 3
VERSIONS_DEFAULT = 0b100                         # version 3 only
