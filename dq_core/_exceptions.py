"""The queue exceptions: the standard library's own classes where it has them."""

from __future__ import annotations

import queue

__all__ = ["Empty", "Full", "ShutDown"]

Empty = queue.Empty
Full = queue.Full

if hasattr(queue, "ShutDown"):  # Python >= 3.13
    ShutDown = queue.ShutDown
else:

    class ShutDown(Exception):  # type: ignore[no-redef]
        """Raised when put/get with shut-down queue."""

    ShutDown.__module__ = "dq_core"
