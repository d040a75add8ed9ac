"""bench train's networks: P hosts in network namespaces joined by a bridge, each host's
egress limited by tc tbf (Network), or the software NIC's bridge with its engines on
every port (NicNetwork). Needs root."""

from __future__ import annotations

import subprocess

SUBNET = "10.88.0"


class Network:
    """P hosts (10.88.0.1..P on eth0) on one bridge; each host's egress a tbf."""

    def __init__(self, world):
        from inceptionn.drivers.netns import bridged_hosts
        self.switch, self.hosts = bridged_hosts(world, SUBNET, mtu=9000)

    def addr(self, r):
        return f"{SUBNET}.{r + 1}"

    def ifname(self, r):
        return "eth0"

    def popen(self, r, argv, **kw):
        return subprocess.Popen(self.hosts[r].cmd(argv), **kw)

    def rate(self, gbps):
        for ns in self.hosts:
            ns.run(["tc", "qdisc", "del", "dev", "eth0", "root"], check=False)
            if gbps is not None:
                burst = max(64 * 1024, int(gbps * 1e9 / 8 / 250))    # 4 ms of the rate
                ns.run(["tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate",
                        f"{gbps * 1000:g}mbit", "burst", str(burst), "latency", "100ms"])

    def close(self):
        for ns in self.hosts + [self.switch]:
            ns.close()


class NicNetwork:
    """P hosts joined by the software NIC (the bridge's namespaces, TAP interfaces), its
    engines on every port, the bounded codec at 2^-10, each port's wire at `gbps`."""

    def __init__(self, world, gbps):
        from inceptionn.drivers.bridge import Bridge
        self.bridge = Bridge(world, mtu=9000, k=10, codec="bounded", rate_gbps=gbps)
        self.bridge.start()
        self.world = world

    def addr(self, r):
        return self.bridge.addr(r)

    def ifname(self, r):
        return self.bridge.ifnames[r]

    def popen(self, r, argv, **kw):
        return self.bridge.popen(r, argv, **kw)

    def wire_ratio(self):
        c = self.bridge.counters()
        host = sum(p["from_host_bytes"] for p in c)
        wire = sum(p["to_wire_bytes"] for p in c)
        return host / wire if wire else 1.0

    def close(self):
        self.bridge.close()
