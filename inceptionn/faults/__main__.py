import sys

from .trials import main

sys.exit(main())
