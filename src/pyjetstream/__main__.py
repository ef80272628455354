"""``python -m pyjetstream <command>``: the same as the ``pyjetstream`` command."""

import sys

from pyjetstream.cli.main import main

sys.exit(main())
