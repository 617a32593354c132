"""Runs the scenarios: the libraries take turns run by run (A B A B ...), each run in a fresh fork."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.child import MeasurementError, NotAvailable, run_in_child
from bench.libs import Lib
from bench.redis_server import Target
from bench.scenarios import Scenario


@dataclass
class Participant:
    label: str  # column: "rq", "rqfast", "rqfast@<sha>" (--baseline), "bullmq", or a peer ("dramatiq", ...)
    lib: Lib | None = None  # None for BullMQ and the peers
    missing: str | None = None  # set when the library cannot run at all (e.g. "not installed")
    baseline_of: str | None = None  # --baseline: the column this one is the old code of ("rqfast")
    peer: bool = False  # one of bench.peers (--peers): measured only in the peers rows (Scenario.others)
    floor: bool = False  # the floor column (bench/floors.py): Scenario.floor


@dataclass
class Cell:
    values: list[float] = field(default_factory=list)
    note: str | None = None  # "n/a: ...", "error: ...", "not installed", or "—" (not measured)


Results = dict[str, dict[str, Cell]]  # row key -> column label -> cell


def _measure_fn(scenario: Scenario, who: Participant) -> Callable[[], Any] | None:
    if who.peer:
        return scenario.others.get(who.label)
    if who.floor:
        return scenario.floor
    if who.lib is None:
        return scenario.bull
    rq_measure, lib = scenario.rq, who.lib
    # activate() runs in the run's own process: it imports a baseline there and checks the module's origin.
    return None if rq_measure is None else (lambda: rq_measure(lib.activate()))


def run_scenario(scenario: Scenario, people: list[Participant], runs: int, target: Target, timeout: float) -> Results:
    """Every run of one scenario; `timeout` bounds one run (three for counted rows: two inner runs)."""
    results: Results = {row.key: {p.label: Cell() for p in people} for row in scenario.rows}
    active = []
    for who in people:
        if who.missing:
            _note_all(results, who.label, who.missing)
        elif _measure_fn(scenario, who) is None:
            _note_all(results, who.label, '—')
        else:
            active.append(who)
    if scenario.prepare_rq is not None:
        target.flush()
        active = [who for who in active if _prepare(scenario, who, runs, results)]
    for run in range(1 if scenario.once else runs):
        for who in list(active):
            if scenario.flush_each_run:
                target.flush()
            if not _one_run(scenario, who, run, results, timeout):
                active.remove(who)  # a failed library is not run again for this scenario
    return results


def _prepare(scenario: Scenario, who: Participant, runs: int, results: Results) -> bool:
    prepare, lib = scenario.prepare_rq, who.lib
    if prepare is None or lib is None:
        _note_all(results, who.label, '—')
        return False
    try:
        run_in_child(lambda: prepare(lib.activate(), runs), timeout=900)  # enqueueing up to 100k jobs
    except (NotAvailable, MeasurementError) as exc:
        _note_all(results, who.label, _describe(exc))
        return False
    return True


def _one_run(scenario: Scenario, who: Participant, run: int, results: Results, timeout: float) -> bool:
    measure = _measure_fn(scenario, who)
    assert measure is not None
    started = time.monotonic()
    try:
        outcome = run_in_child(measure, timeout=timeout * 3 if scenario.once else timeout)
    except (NotAvailable, MeasurementError) as exc:
        _note_all(results, who.label, _describe(exc))
        _progress(scenario.name, run, who.label, _describe(exc).splitlines()[0])
        return False
    values = outcome if isinstance(outcome, dict) else {scenario.rows[0].key: outcome}
    for key, value in values.items():
        results[key][who.label].values.append(float(value))
    shown = ', '.join(f'{v:,.1f}' for v in values.values())
    _progress(scenario.name, run, who.label, f'{shown}  ({time.monotonic() - started:.1f} s)')
    return True


def _describe(exc: Exception) -> str:
    if isinstance(exc, NotAvailable):
        return f'n/a: {exc}'
    return f'error: {exc}'


def _note_all(results: Results, label: str, note: str) -> None:
    for cells in results.values():
        cells[label].note = note


def _progress(name: str, run: int, label: str, text: str) -> None:
    print(f'  {name:<14} run {run + 1}  {label:<14} {text}', file=sys.stderr, flush=True)
