"""A TCP proxy in front of a server, which the explorer cuts to make an outage of our own servers.

``cut()`` closes every connection through it and refuses new ones (as a dead PostgreSQL or
Redis would: the connection is reset); ``restore()`` lets them through again.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from verbatim.embedded import free_port


class Proxy:
    """Listens on 127.0.0.1:``port`` and forwards to ``host``:``target``."""

    def __init__(self, host: str, target: int):
        self.host, self.target = host, target
        self.port = free_port()
        self.down = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()

    def cut(self) -> None:
        self.down.set()
        with self._lock:
            for s in self._open:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self._open.clear()

    def restore(self) -> None:
        self.down.clear()

    def close(self) -> None:
        self.cut()
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self.down.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection((self.host, self.target), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while chunk := src.recv(65536):
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.close()
            with self._lock:
                self._open.discard(src)
                self._open.discard(dst)
