"""Host side of INCEPTIONN.

  inceptionn.drivers.sockets     tag a socket for NIC compression (IP_TOS 0x28); gradient
                                 sockets that keep every segment on a float boundary
  inceptionn.drivers.bridge      the software NIC: namespaces joined through the engines
  inceptionn.drivers.nic_port    one port of it: TX and RX engines, counters, the misaligned-segment count
  inceptionn.drivers.nic_stream  streams between bridge hosts (tests, benchmarks, demo)
  inceptionn.drivers.netns       network namespaces and TAP devices that die with us
  inceptionn.drivers.reaper      kills what a bridge started once it is gone (any signal)
  inceptionn.drivers.mac_table   the switch's MAC table: hosts pinned, the rest learned
  inceptionn.drivers.tcp_align   stream offsets of tagged TCP segments
  inceptionn.drivers.mark        nftables rules that tag unmodified programs by port
  inceptionn.drivers.tcp_frames  gradient buffers as Ethernet/IPv4/TCP frames; pcap files
  inceptionn.gradients         the paper's HDC network in NumPy, source of real gradients
"""

# This folder is inceptionn.drivers (pyproject's package-dir). Imported under another name
# (`import drivers` from the checkout's root) its modules would load twice, as other objects.
if __name__ != "inceptionn.drivers":
    raise ImportError(f"{__name__}: import it as inceptionn.drivers", name=__name__)
