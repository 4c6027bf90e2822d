"""The queue exceptions: the standard library's own classes where it has them."""

from __future__ import annotations

import queue

__all__ = ["Empty", "Full", "SHUTDOWN_GET", "SHUTDOWN_PUT", "ShutDown"]

Empty = queue.Empty
Full = queue.Full

#: The messages of ShutDown, and of dq_core.aio's QueueShutDown: the
#: standard library raises both with none, which says nothing in a traceback.
SHUTDOWN_PUT = "the queue is shut down: it takes no more items"
SHUTDOWN_GET = "the queue is shut down and holds no more items"

if hasattr(queue, "ShutDown"):  # Python >= 3.13
    ShutDown = queue.ShutDown
else:

    class ShutDown(Exception):  # type: ignore[no-redef]
        """Raised when put/get with shut-down queue."""

    ShutDown.__module__ = "dq_core"
