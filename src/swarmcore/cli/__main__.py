"""``python -m swarmcore.cli``: the ``swarmcore`` command."""

import sys

from swarmcore.cli.app import main

sys.exit(main())
