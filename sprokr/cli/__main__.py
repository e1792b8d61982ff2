"""``python -m sprokr.cli ...`` (same as ``sprokr ...``)."""
import sys

from . import main

sys.exit(main())
