"""The engines in Amaranth HDL (the `hw` extra: `pip install inceptionn[hw]`)."""

try:
    import amaranth as _amaranth  # noqa: F401
except ModuleNotFoundError as e:   # a clear message instead of a failure deep in an import
    raise ModuleNotFoundError(
        "the gateware needs Amaranth: install the hw extra (pip install 'inceptionn[hw]')",
        name=e.name) from None
