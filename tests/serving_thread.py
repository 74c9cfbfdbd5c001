"""The small HTTP servers tests run in-process (a proxy, a model hub, a package index, an
embedding server), each served on a thread of its own."""

from __future__ import annotations

import threading
from socketserver import BaseServer

# How often the serving loop looks for shutdown(): serve_forever's default, half a second, was
# what every such test's teardown waited.
SHUTDOWN_POLL = 0.02


def serve_in_thread(server: BaseServer) -> threading.Thread:
    """Serve server on a daemon thread (started); server.shutdown() stops it."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL}, daemon=True
    )
    thread.start()
    return thread
