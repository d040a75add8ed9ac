"""The DDP communication hook, where users import it from:

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    model.register_comm_hook(IncState(), inc_allreduce_hook)

Its code lives with the rest of the gradient exchange, in drivers/collectives/hook.py
(compressors, memory, communicator, transports and hook in one package); this module
names the public part of it.
"""

from .drivers.collectives.hook import (BOUNDS, CODECS, DECIDES, DTYPES, METHODS, MODES,
                                       TRANSPORTS, WIRES, IncState, inc_allreduce_hook)

__all__ = ["IncState", "inc_allreduce_hook", "METHODS", "MODES", "WIRES", "CODECS", "BOUNDS",
           "TRANSPORTS", "DECIDES", "DTYPES"]
