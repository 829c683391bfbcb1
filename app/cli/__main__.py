"""``python -m app.cli``: the ``svmsvc`` command."""

import sys

from app.cli import main

sys.exit(main())
