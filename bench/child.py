"""Process helpers: every measurement runs in a fresh fork, with a time limit, so that no run
inherits another's signal handlers, memory or stuck worker, and a hung library costs one row."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

_FORK = multiprocessing.get_context('fork')


class MeasurementError(Exception):
    """A run failed or timed out; the cell shows the message instead of a figure."""


class NotAvailable(Exception):
    """The library cannot run this row (a class or option it does not have); the cell says n/a."""


def run_in_child(fn: Callable[[], Any], timeout: float) -> Any:
    """Run fn() in a forked child and return its (picklable) result."""
    receiver, sender = _FORK.Pipe(duplex=False)
    proc = _FORK.Process(target=_child_main, args=(fn, sender), daemon=False)
    proc.start()
    sender.close()
    try:
        if not receiver.poll(timeout):
            raise MeasurementError(f'timed out after {timeout:.0f} s')
        try:
            status, payload = receiver.recv()
        except EOFError:
            raise MeasurementError('measurement process died') from None
    except BaseException:  # a timeout, or Ctrl-C: stop the run and whatever it started
        _kill_group(proc.pid)
        raise
    finally:
        proc.join(timeout=10)
        if proc.is_alive():
            _kill_group(proc.pid)
            proc.join()
        receiver.close()
    if status == 'n/a':
        raise NotAvailable(payload)
    if status == 'error':
        raise MeasurementError(payload)
    return payload


def _child_main(fn: Callable[[], Any], sender: Any) -> None:
    os.setpgid(0, 0)  # so that a timeout can stop the workers this run started, too
    try:
        sender.send(('ok', fn()))
    except NotAvailable as exc:
        sender.send(('n/a', str(exc)))
    except BaseException as exc:  # report anything, including SystemExit from a worker
        detail = traceback.format_exc(limit=-3)
        sender.send(('error', f'{type(exc).__name__}: {exc}\n{detail}'))
    finally:
        sender.close()


def _kill_group(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_group(size: int, setup: Callable[[], Callable[[], Any]], timeout: float) -> tuple[float, float]:
    """Fork `size` processes; each calls setup() (not timed), waits for the others, then runs
    the action setup returned. Returns the common start (epoch seconds) and the seconds from
    there until the last process finished its action."""
    barrier = _FORK.Barrier(size + 1)
    finished = _FORK.Queue()
    members = [_FORK.Process(target=_member_main, args=(setup, barrier, finished)) for _ in range(size)]
    for member in members:
        member.start()
    try:
        barrier.wait(timeout)
        start, start_epoch = time.monotonic(), time.time()
        ends = [finished.get(timeout=timeout) for _ in members]
    except Exception as exc:
        for member in members:
            if member.is_alive():
                member.kill()
        reason = _first_message(finished) or f'{type(exc).__name__} {exc}'
        raise MeasurementError(f'process group failed: {reason}') from None
    finally:
        for member in members:
            member.join()
    failures = [end for end in ends if isinstance(end, str)]
    if failures:
        raise MeasurementError(f'{len(failures)} of {size} processes failed; first: {failures[0]}')
    return start_epoch, max(ends) - start


def _first_message(finished: Any) -> str | None:
    try:
        while True:
            item = finished.get(timeout=0.5)
            if isinstance(item, str) and 'BrokenBarrierError' not in item:
                return item
    except Exception:
        return None


def _member_main(setup: Callable[[], Callable[[], Any]], barrier: Any, finished: Any) -> None:
    try:
        action = setup()
        barrier.wait()
        action()
        finished.put(time.monotonic())
    except BaseException as exc:
        barrier.abort()
        finished.put(f'{type(exc).__name__}: {exc}')
