"""A fault-injecting TCP proxy between the tests' clients and redis-server.

It forwards bytes both ways, one thread per connection, and on request:

- ``drop_reply(marker, hook)``: once a command containing ``marker`` (e.g. a
  script's SHA) passes, the server's reply to it is swallowed, ``hook()`` runs
  (the world moves on meanwhile), and the connection is closed: the client
  sees its reply lost and may send the command again on a new connection.
- ``half_open(marker, later=True)``: connections that sent ``marker``
  (``SUBSCRIBE``) stop receiving anything, and nothing tells them: a NAT or
  load balancer that forgot the connection; with ``later=False`` only those
  open now (a single fault), else every one that sends it from now on too.
- ``kill_all()``: close every connection.
- ``refuse(True)``: close every connection and refuse new ones (as a server
  that is down), until ``refuse(False)``.
"""

from __future__ import annotations

import select
import socket
import threading
from typing import Callable, List, Optional


class Proxy:
    def __init__(self, port: int) -> None:
        self.target = ("127.0.0.1", port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.conns: List["_Conn"] = []
        self.drop_marker: Optional[bytes] = None
        self.drop_hook: Callable[[], None] = lambda: None
        self.dropped = 0
        self.errors: List[BaseException] = []
        self.half_open_marker: Optional[bytes] = None
        self.refusing = False
        self.closed = False
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def drop_reply(self, marker: bytes, hook: Callable[[], None] = lambda: None) -> None:
        with self.lock:
            self.drop_marker, self.drop_hook = marker, hook

    def half_open(self, marker: bytes, later: bool = True) -> int:
        """Black-hole the server's bytes to connections that sent ``marker``; how many."""
        with self.lock:
            self.half_open_marker = marker if later else None
            hit = [c for c in self.conns if marker in c.sent and not c.done]
            for c in hit:
                c.deaf = True
        return len(hit)

    def refuse(self, on: bool) -> None:
        self.refusing = on
        if on:
            self.kill_all()

    def kill_all(self) -> None:
        with self.lock:
            conns, self.conns = self.conns, []
        for c in conns:
            c.close()

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.kill_all()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            conn = _Conn(self, client, server)
            with self.lock:
                self.conns.append(conn)
            threading.Thread(target=conn.pump, daemon=True).start()


class _Conn:
    def __init__(self, proxy: Proxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy, self.client, self.server = proxy, client, server
        self.sent = b""  # what the client sent lately (markers are looked for in it)
        self.armed = False  # the next reply is to be dropped
        self.deaf = False
        self.done = False

    def close(self) -> None:
        self.done = True
        for s in (self.client, self.server):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def pump(self) -> None:
        try:
            while not self.done:
                ready, _, _ = select.select([self.client, self.server], [], [], 0.1)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        self.close()
                        return
                    if s is self.client:
                        self.sent = (self.sent + data)[-4096:]
                        p = self.proxy
                        with p.lock:
                            if p.drop_marker is not None and p.drop_marker in data:
                                p.drop_marker = None
                                self.armed = True
                            if p.half_open_marker is not None and p.half_open_marker in self.sent:
                                self.deaf = True
                        self.server.sendall(data)
                    elif self.armed:  # the reply is lost on its way back
                        self.proxy.dropped += 1
                        self.proxy.drop_hook()
                        self.close()
                        return
                    elif not self.deaf:
                        self.client.sendall(data)
        except OSError:
            self.close()
        except BaseException as exc:  # a hook that failed: the test reads proxy.errors
            self.proxy.errors.append(exc)
            self.close()
