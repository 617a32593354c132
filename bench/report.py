"""The report: machine facts, the markdown table, and the results file."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import socket
import statistics
from pathlib import Path

from bench.libs import origin_of
from bench.runner import Cell, Participant, Results
from bench.scenarios import Row, Scenario


def cpu_model() -> str:
    try:
        with open('/proc/cpuinfo') as cpuinfo:
            for line in cpuinfo:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or 'unknown'


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return 'not installed'


def usable_cpus() -> int:
    """CPUs this process may run on (a container may allow fewer than the machine has)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1


def machine_facts(
    redis_version: str,
    redis_where: str,
    people: list[Participant],
    bullmq: str | None,
    mode: str,
    runs: int,
    usable: int,
) -> list[tuple[str, str]]:
    facts = [
        ('host', socket.gethostname()),
        ('date', datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M %Z')),
        ('cores', f'{os.cpu_count()} ({usable} usable by the bench)'),
        ('CPU', cpu_model()),
        ('OS', f'{platform.system()} {platform.release()}'),
        ('load average at start', ' '.join(f'{x:.2f}' for x in os.getloadavg())),
        ('Python', f'{platform.python_implementation()} {platform.python_version()}'),
        ('Redis', f'{redis_version} ({redis_where})'),
        ('redis-py', _version('redis')),
        ('hiredis', _version('hiredis')),
    ]
    for who in people:
        lib = who.lib
        if lib is None:
            continue
        if lib.deferred:  # a --baseline: never imported here, its version says which commit and where
            facts.append((lib.label, lib.version))
        else:
            where = f' from {origin_of(lib.module)}' if lib.root is not None else ''
            facts.append((lib.label, f'{lib.version} (module {lib.module_name}{where})'))
    facts.append(('bullmq', bullmq or 'not installed'))
    facts.append(('mode', f'{mode}, {runs} runs per timed row'))
    return facts


def _fmt(value: float, row: Row) -> str:
    return f'{value:,.{row.digits}f}'


def _cell_text(cell: Cell, row: Row) -> str:
    if cell.note is not None:
        return 'n/a' if cell.note.startswith('n/a') else cell.note.split(':')[0]
    if not cell.values:
        return '—'
    if len(cell.values) == 1:
        return _fmt(cell.values[0], row)
    mid = statistics.median(cell.values)
    return f'{_fmt(mid, row)} ({_fmt(min(cell.values), row)}–{_fmt(max(cell.values), row)})'


def _ratio(cell: Cell, base: Cell) -> str:
    if cell.note or base.note or not cell.values or not base.values:
        return '—'
    denominator = statistics.median(base.values)
    if denominator == 0:
        return '—'
    return f'{statistics.median(cell.values) / denominator:.2f}×'


def _best_peer(cells: dict[str, Cell], row: Row, peer_labels: list[str], ours: str = 'rqfast') -> str:
    """rqfast's median over the best peer's (the highest for ↑ rows, the lowest for ↓ rows), naming it."""
    mine = cells.get(ours)
    if mine is None or mine.note or not mine.values:
        return '—'
    medians = {label: statistics.median(cells[label].values) for label in peer_labels if cells[label].values}
    medians = {label: value for label, value in medians.items() if not cells[label].note}
    if not medians:
        return '—'
    pick = max if row.higher_is_better else min
    best = pick(medians, key=lambda label: medians[label])
    if medians[best] == 0:
        return '—'
    return f'{statistics.median(mine.values) / medians[best]:.2f}× ({best})'


def table(scenarios: list[Scenario], results: Results, people: list[Participant]) -> str:
    base = people[0].label  # rq
    peer_labels = [who.label for who in people if who.peer]
    headers = ['Scenario', 'Unit']
    for who in people:
        headers.append(who.label if who.label != 'bullmq' else 'BullMQ')
        if who.floor:
            headers.append('rqfast / floor')
        elif who.label != base and not who.peer:
            headers.append(f'{headers[-1]} / {base}')
        if who.baseline_of:
            headers.append(f'{who.baseline_of} / baseline')
    if peer_labels:
        headers.append('rqfast / best peer')
    lines = ['| ' + ' | '.join(headers) + ' |', '|' + '---|' * 2 + '---:|' * (len(headers) - 2)]
    for scenario in scenarios:
        for row in scenario.rows:
            cells = results.get(row.key)
            if cells is not None:
                lines.append('| ' + ' | '.join(_line(row, cells, people, peer_labels)) + ' |')
    return '\n'.join(lines)


def _line(row: Row, cells: dict[str, Cell], people: list[Participant], peer_labels: list[str]) -> list[str]:
    base = people[0].label
    parts = [row.label, row.unit]
    for who in people:
        parts.append(_cell_text(cells[who.label], row))
        if who.floor:
            parts.append(_ratio(cells['rqfast'], cells[who.label]))
        elif who.label != base and not who.peer:
            parts.append(_ratio(cells[who.label], cells[base]))
        if who.baseline_of:
            parts.append(_ratio(cells[who.baseline_of], cells[who.label]))
    if peer_labels:
        parts.append(_best_peer(cells, row, peer_labels))
    return parts


def notes(scenarios: list[Scenario], results: Results, people: list[Participant]) -> list[str]:
    """One line per distinct reason a cell has no figure, naming the rows it applies to."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for scenario in scenarios:
        if not any(row.key in results for row in scenario.rows):
            continue
        for who in people:
            note = results[scenario.rows[0].key][who.label].note
            if note and note != '—':
                grouped.setdefault((who.label, note), []).append(scenario.name)
    lines = []
    for (label, note), names in grouped.items():
        first_line = note.splitlines()[0]
        lines.append(f'- {label} ({", ".join(names)}): {first_line}')
    return lines


def document(
    facts: list[tuple[str, str]],
    body: str,
    note_lines: list[str],
    runs: int,
    elapsed: float,
    baseline: str | None = None,
    peer_labels: list[str] | None = None,
    async_peers: list[str] | None = None,
) -> str:
    parts = ['# rqfast benchmark', '']
    parts += [f'- {name}: {value}' for name, value in facts]
    parts += [f'- bench runtime: {elapsed:.0f} s', '', body, '']
    turns = f'rq, rqfast, {baseline}, BullMQ, rq, ...' if baseline else 'rq, rqfast, BullMQ, rq, ...'
    parts += [
        f'Timed rows: median (min–max) of {runs} runs; the libraries take turns run by run ({turns}), '
        'each run in a fresh process on a freshly flushed Redis (growth rows: on a '
        "backlog each library filled once). A worker's time runs from work() to the last job's ended_at. "
        'Ratios divide medians (> 1 means more of the unit: better for ↑ rows, worse for ↓ rows). Counted '
        'and memory rows are single runs. — : no equivalent in that library. See bench/README.md.',
    ]
    if baseline:
        parts += [
            '',
            f'{baseline} is rqfast as of that commit, run in the same way in the same run; rqfast / baseline '
            "divides the working tree's median by its median (↑ rows: below 1 means slower than before).",
        ]
    if peer_labels:
        parts += [
            '',
            f'Peers rows: {", ".join(peer_labels)} take their turns after BullMQ. Each library runs ONE worker '
            "process at the row's concurrency (threads or one event loop, as it runs jobs), its time from the "
            "worker's start to the end of the last job, checked by counting the jobs that ran (RQ, rqfast: "
            'their finished registry; BullMQ: its completed count; a peer: a tally its jobs add to), and the '
            "INCRs of the rows with a Redis call. Redis CPU per job is the private redis-server's used_cpu_sys "
            '+ used_cpu_user (INFO cpu) from before the jobs were enqueued (not timed, but its CPU counts) to '
            'the end of the last job, divided by the jobs; on the enqueue rows, over the enqueueing alone. '
            "rqfast / best peer divides rqfast's median by the best peer's (the highest on ↑ rows, the lowest "
            "on ↓ rows); RQ and BullMQ are not peers there. Each peer's configuration is in the facts above.",
        ]
    if async_peers:
        parts += [
            '',
            f'Async rows: {", ".join(async_peers)} take their turns after BullMQ, each with its own async '
            "producer (in the facts above) awaited from the row's coroutines on one client of its own, the same "
            'no-op job, checked by counting the jobs it holds in Redis afterwards. Every column opens its '
            "connections and enqueues one job before the clock starts. rqfast / best peer divides rqfast's "
            "median by the best of these peers' (BullMQ is not one of them: see BullMQ / rq and rqfast / rq).",
        ]
    if note_lines:
        parts += ['', 'Cells without a figure:', *note_lines]
    return '\n'.join(parts) + '\n'


def write(out_dir: Path, text: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    day = datetime.date.today().isoformat()
    stem = f'{day}-{socket.gethostname()}'
    path = out_dir / f'{stem}.md'
    number = 1
    while path.exists():  # never overwrite an earlier run of the same day
        number += 1
        path = out_dir / f'{stem}-{number}.md'
    path.write_text(text)
    return path
