"""The engines in Amaranth HDL (the `hw` extra: `pip install inceptionn[hw]`)."""

# This folder is inceptionn.hw (pyproject's package-dir). Imported under another name
# (`import hw` from the checkout's root) its modules would load twice, as other objects.
if __name__ != "inceptionn.hw":
    raise ImportError(f"{__name__}: import it as inceptionn.hw", name=__name__)

try:
    import amaranth as _amaranth  # noqa: F401
except ModuleNotFoundError as e:   # a clear message instead of a failure deep in an import
    raise ModuleNotFoundError(
        "the gateware needs Amaranth: install the hw extra (pip install 'inceptionn[hw]')",
        name=e.name) from None
