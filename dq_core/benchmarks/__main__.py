"""``python -m dq_core.benchmarks``: the same quick comparison as ``python -m dq_core.bench``."""

from dq_core.benchmarks.table import main

raise SystemExit(main())
