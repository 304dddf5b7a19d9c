"""``python -m tournaments``: the tournament command line (tournaments/cli.py)."""
import sys

from .cli import main

sys.exit(main())
