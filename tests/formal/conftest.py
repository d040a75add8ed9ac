"""Every test in this folder is a formal proof (marker ``formal``): `make test` runs them at
the depths that take seconds, `make formal` (INCEPTIONN_FORMAL=1) at full depth."""

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "tests/formal/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.formal)
