"""The cocotb testbenches: each drives one block of inceptionn.hw on Verilator."""

# This folder is inceptionn.sim (pyproject's package-dir). Imported under another name
# (`import sim` from the checkout's root) its modules would load twice, as other objects.
if __name__ != "inceptionn.sim":
    raise ImportError(f"{__name__}: import it as inceptionn.sim", name=__name__)
