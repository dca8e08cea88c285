"""``python -m zymase.bench`` is ``zymase bench``."""

import sys

from zymase.bench.runner import main

sys.exit(main())
