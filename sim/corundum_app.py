"""The app block's cores as design factories for the Verilator runner: one per stream
width, with the engine modules they instantiate (``instances``), kept apart from the
testbench so that editing the testbench does not rebuild the model (the runner keys a
factory's conversion by its module's source)."""

from ..rtl.designs import DESIGNS

__all__ = ["app_core_w64", "app_core_w512", "FACTORIES"]


def app_core_w64():
    from ..hw.corundum.app import AppConfig, InceptionnApp
    return InceptionnApp(AppConfig(nic_bits=64))


def app_core_w512():
    from ..hw.corundum.app import AppConfig, InceptionnApp
    return InceptionnApp(AppConfig(nic_bits=512))


FACTORIES = {64: app_core_w64, 512: app_core_w512}
for _f in FACTORIES.values():
    _f.instances = tuple((name, factory) for name, factory, _ in (DESIGNS["tx"], DESIGNS["rx"]))
