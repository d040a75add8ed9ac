"""`python -m inceptionn`: the same command line as the `inceptionn` script."""

import sys

from .cli import main

sys.exit(main())
