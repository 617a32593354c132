"""A TCP forwarder on loopback that can go silent: a network path that drops everything without closing.

`SilentProxy(target_port)` listens on a port of its own and forwards each connection to 127.0.0.1:target
in both directions (a thread per connection pair). `silence()` makes it a black hole, as a cloud load
balancer or a NAT that dropped an idle flow is: it keeps accepting connections and reading from both
sides, but forwards nothing and closes nothing (what a side sends while silent is lost). `restore()`
forwards again, on the connections of before and new ones alike: a connection whose request or reply
was lost stays out of step, so a client notices it only by a timeout of its own.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


class SilentProxy:
    def __init__(self, target_port: int, host: str = '127.0.0.1') -> None:
        self.target = (host, target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, 0))
        self.listener.listen(128)
        self.port: int = self.listener.getsockname()[1]
        self.url = f'redis://{host}:{self.port}/0'
        self.silent = threading.Event()
        self.closed = threading.Event()
        self.dropped = 0  # bytes read and not forwarded while silent
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name='silent-proxy-accept', daemon=True).start()

    def silence(self) -> None:
        self.silent.set()

    def restore(self) -> None:
        self.silent.clear()

    def close(self) -> None:
        self.closed.set()
        with contextlib.suppress(OSError):
            self.listener.close()
        with self._lock:
            for sock in self._sockets:
                with contextlib.suppress(OSError):
                    sock.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        peer = {client: upstream, upstream: client}
        try:
            while not self.closed.is_set():
                ready, _, _ = select.select([client, upstream], [], [], 0.2)
                for sock in ready:
                    data = sock.recv(65536)
                    if not data:  # one side closed: so does the other (only then)
                        return
                    if self.silent.is_set():
                        self.dropped += len(data)
                    else:
                        peer[sock].sendall(data)
        except OSError:
            return
        finally:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()
