"""The link trial's network: P hosts (network namespaces, eth0 on a veth) on one bridge,
and an uplink from this namespace to the bridge, where the runner serves the trial's
rendezvous store. The namespaces end with this process however it ends
(drivers/netns.py); the uplink's veth goes with the bridge's namespace. Needs root."""

from __future__ import annotations

import subprocess

SUBNET = "10.248.48"           # apart from the benchmarks' 10.88.0.0/24
UPLINK = f"{SUBNET}.254"


class Hosts:
    def __init__(self, world: int):
        from inceptionn.drivers.netns import bridged_hosts
        self.switch, self.hosts = bridged_hosts(world, SUBNET)
        self.uplink = f"fq{self.switch.pid % 100000}"
        try:
            _ip("link", "add", self.uplink, "type", "veth", "peer", "name", "up0")
            _ip("link", "set", "up0", "netns", str(self.switch.pid))
            _ip("addr", "add", f"{UPLINK}/24", "dev", self.uplink)
            _ip("link", "set", self.uplink, "up")
            self.switch.run(["ip", "link", "set", "up0", "master", "br0", "up"])
        except BaseException:
            self.close()
            raise

    def env(self, store_port: int) -> dict:
        return {"netns": [h.path for h in self.hosts],
                "addr": [f"{SUBNET}.{i + 1}" for i in range(len(self.hosts))],
                "store": UPLINK, "port": store_port}

    def link(self, rank: int, up: bool) -> None:
        self.hosts[rank].run(["ip", "link", "set", "eth0", "up" if up else "down"])

    def pids(self) -> list[int]:
        return [ns.pid for ns in self.hosts + [self.switch]]

    def close(self) -> None:
        for ns in self.hosts + [self.switch]:
            ns.close()
        subprocess.run(["ip", "link", "del", self.uplink], capture_output=True)


def _ip(*argv) -> None:
    res = subprocess.run(["ip", *argv], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"ip {' '.join(argv)}: {res.stderr.strip()}")
