"""`python -m decoder` runs mlxcel-bench-decode."""

import sys

from .bench_decode import main

sys.exit(main())
