"""The breeder: a single-threaded fork of the worker whose only work is forking the worker's horses.

Forking a horse from the worker itself costs the worker the fork and, while the horse lives, a
copy-on-write fault for every page the worker touches; and the worker has threads (heartbeat,
pub/sub) that a fork does not carry. The breeder is forked once and stays idle between forks. It
also imports the module of the worker's last job (by name, as the horses report it), so a horse
starts with it loaded. Every horse is still a fresh fork that runs one job.

The worker sends a request (the module to preload, and the horse's ends of its two pipes as
SCM_RIGHTS) and gets back the horse's pid; the breeder reaps its horses and reports each exit.
The worker never takes the breeder's word for a job's outcome: that comes from the horse's pipe.
"""

from __future__ import annotations

import gc
import os
import pickle
import select
import signal
import socket
import struct
import time
import traceback
from collections.abc import Callable
from typing import Any

from .. import horse

_HEADER = struct.Struct('!I')


class BreederError(Exception):
    """The breeder died or stopped answering."""


def _frame(obj: Any) -> bytes:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


class _Frames:
    """Splits what a stream socket returns into messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER.size:
            size = _HEADER.unpack_from(self._buffer)[0]
            if len(self._buffer) < _HEADER.size + size:
                break
            messages.append(pickle.loads(bytes(self._buffer[_HEADER.size : _HEADER.size + size])))
            del self._buffer[: _HEADER.size + size]
        return messages


class Breeder:
    """The worker's handle on its breeder."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self._sock = sock
        self._frames = _Frames()
        self._exits: dict[int, tuple[int, Any]] = {}
        self._pids: list[int] = []  # horses forked on request, not yet given out (next_pid)
        self.alive = True

    @classmethod
    def start(
        cls, run_horse: Callable[[int, int], None], close_in_child: list[int], warm: Callable[[], None] | None = None
    ) -> Breeder:
        """Fork the breeder; in it, `run_horse(job_fd, report_fd)` is what each forked horse runs."""
        worker_end, breeder_end = socket.socketpair()
        horse.flush_stdio()
        pid = os.fork()
        if pid == 0:
            worker_end.close()
            for fd in close_in_child:
                try:
                    os.close(fd)
                except OSError:
                    pass
            _breed(breeder_end, run_horse, warm)
        breeder_end.close()
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        return cls(pid, worker_end)

    def fork_horse(self, module: str, job_fd: int, report_fd: int, timeout: float) -> int:
        """A new horse on those pipe ends (the caller closes its copies); BreederError if that fails."""
        self.request_horse(module, job_fd, report_fd)
        return self.next_pid(timeout)

    def request_horse(self, module: str, job_fd: int, report_fd: int) -> None:
        """Ask for a horse without waiting for it: next_pid() gives its pid, in the order of the requests."""
        try:
            socket.send_fds(self._sock, [_frame(module)], [job_fd, report_fd])
        except OSError as exc:
            self._gone()
            raise BreederError(f'breeder {self.pid}: {exc}') from exc

    def next_pid(self, timeout: float) -> int:
        """The pid of the oldest requested horse not yet given out; BreederError if it does not come in time."""
        deadline = time.monotonic() + timeout
        while not self._pids:
            self._read(deadline - time.monotonic())
            if self._pids:
                break
            if not self.alive:
                raise BreederError(f'breeder {self.pid} died')
            if time.monotonic() > deadline:
                raise BreederError(f'breeder {self.pid} did not answer in {timeout} seconds')
        return self._pids.pop(0)

    def reaped(self, pid: int, block: bool) -> tuple[int, Any] | None:
        """(wait status, rusage) of one of its horses once it has exited, as the breeder reaped it."""
        while pid not in self._exits and self.alive:
            if not self._read(None if block else 0) and not block:
                break
        if pid in self._exits:
            return self._exits.pop(pid)
        if self.alive:
            return None
        return (0, None) if block or not _running(pid) else None  # its breeder is gone: no status

    def fileno(self) -> int:
        return self._sock.fileno()

    def _read(self, timeout: float | None) -> list[Any]:
        """Messages available within `timeout` (None: wait for some); exits are kept for reaped()."""
        if not self.alive:
            return []
        wait = None if timeout is None else max(0.0, timeout)
        ready, _, _ = select.select([self._sock], [], [], wait)
        if not ready:
            return []
        try:
            data = self._sock.recv(1 << 16)
        except OSError:  # reset: it died with our request unread
            data = b''
        if not data:
            self._gone()
            return []
        messages = self._frames.feed(data)
        for message in messages:
            if message[0] == 'exit':
                self._exits[message[1]] = (message[2], message[3])
            elif message[0] == 'pid':
                self._pids.append(int(message[1]))
        return messages

    def _gone(self) -> None:
        self.alive = False
        try:
            os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            pass

    def stop(self, wait: float) -> None:
        """It exits when its socket closes; one that does not, in time, is killed."""
        self._sock.close()
        self.alive = False
        deadline = time.monotonic() + wait
        while True:
            try:
                done, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return
            if done:
                return
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                return
            time.sleep(0.005)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- in the breeder


def _breed(sock: socket.socket, run_horse: Callable[[int, int], None], warm: Callable[[], None] | None) -> None:
    code = 1
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the worker's to handle
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # so that an exit wakes the loop
        if warm is not None:
            warm()
        _serve(sock, (wake_read, wake_write), run_horse)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        horse.flush_stdio()
        os._exit(code)


def _serve(sock: socket.socket, wake: tuple[int, int], run_horse: Callable[[int, int], None]) -> None:
    wake_read = wake[0]
    preloaded: set[str] = set()
    # What the breeder holds now is what every horse starts with: out of the collector's sight, so that
    # a collection in a horse does not touch (and copy) every page of it.
    gc.freeze()
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_read, select.POLLIN)
    while True:
        events = dict(poller.poll())
        if wake_read in events:
            os.read(wake_read, 512)
            _report_exits(sock)
        if sock.fileno() in events:
            try:
                data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 2)
            except OSError:
                data = b''
            if not data:
                return  # the worker is gone or stopping
            module = pickle.loads(data[_HEADER.size :])  # one small request at a time: it comes whole
            if module and module not in preloaded:
                preloaded.add(module)
                horse.preload(module)
                gc.freeze()
            pid = _fork(sock, wake, run_horse, fds)
            try:
                sock.sendall(_frame(('pid', pid)))
            except OSError:
                return


def _fork(sock: socket.socket, wake: tuple[int, int], run_horse: Callable[[int, int], None], fds: list[int]) -> int:
    job_fd, report_fd = fds
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.close()
        for fd in wake:
            os.close(fd)
        run_horse(job_fd, report_fd)
    for fd in fds:
        os.close(fd)
    try:
        os.setpgid(pid, pid)  # the horse does it too: whichever comes first, a kill finds the group
    except OSError:
        pass
    return pid


def _report_exits(sock: socket.socket) -> None:
    while True:
        try:
            pid, status, rusage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not pid:
            return
        try:
            sock.sendall(_frame(('exit', pid, status, rusage)))
        except OSError:  # the worker stopped listening: it is going away, and so are we
            return
