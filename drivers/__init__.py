"""Host side of INCEPTIONN.

  inceptionn.drivers.sockets  tag a socket's traffic for NIC compression (IP_TOS 0x28)
  inceptionn.drivers.frames   gradient buffers as Ethernet/IPv4/TCP frames; pcap files
  inceptionn.drivers.hdc      the paper's HDC network in NumPy, source of real gradients
"""
