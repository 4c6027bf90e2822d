"""``python -m dq_core.redis``: stats, peek, dead, requeue, purge (see ``_cli``)."""

from ._cli import main

raise SystemExit(main())
