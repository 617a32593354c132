"""python -m bench [--quick] [--runs N] [--only SCENARIO,...] [--out DIR] [--baseline REV] [--peers [LIST]]

Measures rqfast and RQ (and BullMQ, if installed) against the same private redis-server in one
run and prints a markdown table, also written to bench/results/<date>-<host>.md. With --baseline,
rqfast as of git revision REV runs in the same run as a column of its own. With --peers, the peers
rows instead: rqfast beside dramatiq, celery, huey, arq, saq and taskiq (pip install -e ".[peers]").
`--only async` adds arq's, saq's and taskiq's async producers to the async rows as columns of their own.
"""

from __future__ import annotations

import argparse
import compileall
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench import baseline, peers, report
from bench.counting import REPO_ROOT
from bench.libs import bullmq_version, load_lib
from bench.peers import rows as peer_rows
from bench.redis_server import PrivateRedis, Target
from bench.runner import Participant, Results, run_scenario
from bench.scales import FULL, QUICK
from bench.scenarios import Scenario, build

DEFAULT_OUT = Path(__file__).resolve().parent / 'results'


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog='python -m bench', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument('--quick', action='store_true', help='small scales: under 2 minutes')
    parser.add_argument('--runs', type=int, default=5, help='runs per timed row and library (default 5)')
    parser.add_argument('--only', help='comma-separated scenarios or prefixes (e.g. noop,io-10); see --list')
    parser.add_argument('--list', action='store_true', help='list the scenarios and exit')
    parser.add_argument('--out', type=Path, help='directory for the results file (default bench/results)')
    parser.add_argument('--no-bullmq', action='store_true', help='skip BullMQ even if it is installed')
    parser.add_argument(
        '--peers',
        nargs='?',
        const='all',
        metavar='LIST',
        help='run the peers rows (only them, unless --only says otherwise) with these other job queues as columns: '
        f'all (the default) or some of {",".join(peers.BY_NAME)}; they come with pip install -e ".[peers]"',
    )
    parser.add_argument(
        '--pin', action='store_true', help='pin redis-server to one CPU and the bench and workers to the others'
    )
    parser.add_argument(
        '--redis-url',
        help='measure against this server instead of a private one; '
        'the bench FLUSHes its database and resets its stats, so it needs --i-own-this-redis',
    )
    parser.add_argument('--i-own-this-redis', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument(
        '--baseline',
        metavar='REV',
        help="also measure rqfast as of git revision REV (e.g. HEAD~5, a sha), in the same run: column 'rqfast@<sha>'",
    )
    # Tests the harness: RQ runs in the rqfast column too, so every ratio should be near 1.
    parser.add_argument('--self-test', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.redis_url and not args.i_own_this_redis:
        parser.error(
            "--redis-url: RQ's keys have a fixed 'rq:' prefix, so the bench must FLUSHDB that "
            'database and CONFIG RESETSTAT the server between runs. Pass --i-own-this-redis if '
            'nothing else uses it, or leave --redis-url out to use a private redis-server.'
        )
    if args.runs < 1:
        parser.error('--runs must be at least 1')
    if args.baseline and args.self_test:
        parser.error('--baseline and --self-test do not mix (try --baseline HEAD on a clean tree instead)')
    try:
        args.peer_list = peers.parse(args.peers or 'all')
    except ValueError as exc:
        parser.error(str(exc))
    return args


def selected(scenarios: list[Scenario], only: str | None, with_peers: bool = False) -> list[Scenario]:
    """--only's scenarios; without it, the peers rows alone with --peers, every other row without."""
    if not only:
        return [s for s in scenarios if is_peers_row(s) == with_peers]
    wanted = [name.strip() for name in only.split(',') if name.strip()]
    chosen = [s for s in scenarios if any(s.name == w or s.name.startswith(w + '-') for w in wanted)]
    if not chosen:
        raise SystemExit(f'--only {only}: no such scenario; try --list')
    return chosen


def is_peers_row(scenario: Scenario) -> bool:
    return scenario.name.startswith('peers-')


def peer_columns(args: argparse.Namespace, scenarios: list[Scenario]) -> list[peers.Peer]:
    """The peers (of --peers' list) with a measure in the selected rows: with --peers, or when --only picks
    rows that have them (the async rows' arq, saq and taskiq); a full default run has no peer columns."""
    if args.peers is None and not args.only:
        return []
    wanted = {name for scenario in scenarios for name in scenario.others}
    return [peer for peer in args.peer_list if peer.name in wanted]


def participants(
    self_test: bool, no_bullmq: bool, old: baseline.Baseline | None, others: list[peers.Peer] | None = None
) -> tuple[list[Participant], str | None]:
    """rq first (the ratios' base), rqfast, a --baseline, BullMQ, then the peers of the peers rows."""
    ours = load_lib('rqfast', 'rq' if self_test else 'rqfast')
    if not self_test:
        ours.root = REPO_ROOT  # every run checks that this column runs the working tree's rqfast
    people = [Participant('rq', load_lib('rq', 'rq')), Participant('rqfast', ours)]
    if old is not None:
        lib = old.lib()
        people.append(Participant(old.label, lib, missing=baseline.probe(lib), baseline_of='rqfast'))
    bull = bullmq_version()
    if no_bullmq:
        people.append(Participant('bullmq', missing='skipped (--no-bullmq)'))
    else:
        people.append(Participant('bullmq', missing=None if bull else 'not installed'))
    for peer in others or []:
        people.append(Participant(peer.name, missing=peers.missing(peer), peer=True))
    people.append(Participant('floor', floor=True))
    return people, bull


def compile_sources(old: baseline.Baseline | None) -> None:
    """Byte-compile rqfast and bench as `pip install` compiles rq, so that no spawned child pays for compiling
    source that its rq counterpart gets precompiled (PYTHONDONTWRITEBYTECODE would otherwise keep it so).
    A --baseline's rqfast too, in its temporary directory."""
    for package in ('rqfast', 'bench'):
        compileall.compile_dir(str(REPO_ROOT / package), quiet=1)
    compileall.compile_file(str(REPO_ROOT / '_rqfast_as_rq.py'), quiet=1)  # rqfast's top-level module (the switch)
    if old is not None:
        compileall.compile_dir(str(old.root / 'rqfast'), quiet=1)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Spawned work horses (SpawnWorker) start a new interpreter: let it find bench.jobs too.
    os.environ['PYTHONPATH'] = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get('PYTHONPATH')) if p)
    with ExitStack() as stack:  # a --baseline's temporary directory goes last, after the server
        old = stack.enter_context(baseline.materialised(REPO_ROOT, args.baseline)) if args.baseline else None
        compile_sources(old)
        text = measure(args, old)
        if old is not None:
            baseline.assert_not_imported_here(old.root)
    if text is None:
        return 0
    print(text)
    # A self-test's figures are not results: they go to the temp directory unless --out says otherwise.
    default_out = Path(tempfile.gettempdir()) / 'bench-self-test' if args.self_test else DEFAULT_OUT
    path = report.write(args.out or default_out, text)
    print(f'written to {path}', file=sys.stderr)
    return 0


def measure(args: argparse.Namespace, old: baseline.Baseline | None) -> str | None:
    """The whole run against a private redis-server (or --redis-url): the report's text, or None after --list."""
    scale = QUICK if args.quick or args.self_test else FULL
    usable = report.usable_cpus()  # before pinning narrows it
    server = None if args.redis_url else PrivateRedis()
    pinning = 'not pinned (the default; --pin pins)' if not args.redis_url else 'not pinned (--redis-url)'
    if server is not None and args.pin:
        pinning = server.pin_apart()
    try:
        target = Target(args.redis_url or server.url)  # type: ignore[union-attr]
        everything = build(scale, target) + peer_rows.build(scale, target, args.peer_list)
        scenarios = selected(everything, args.only, with_peers=args.peers is not None)
        if args.list:
            print('\n'.join(f'{s.name:<18} {s.rows[0].label}' for s in scenarios))
            return None
        others = peer_columns(args, scenarios)
        people, bull = participants(args.self_test, args.no_bullmq, old, others)
        where = "user's server" if args.redis_url else f'private redis-server on 127.0.0.1:{target.port}'
        facts = report.machine_facts(target.version, where, people, bull, scale.name, args.runs, usable)
        facts.append(('CPU pinning', pinning))
        peers_rows = any(is_peers_row(s) for s in scenarios)
        for peer in others:
            how = [peer.how] if peers_rows else []
            if peer.producer and any(s.name.startswith('async-') for s in scenarios):
                how.append(f'async rows: {peer.producer}')
            facts.append((peer.name, f'{peers.version(peer)}: {"; ".join(how)}'))
        if old is not None:
            facts.append(('rqfast column', f'the working tree: {baseline.working_tree_fact(REPO_ROOT)}'))
        if args.self_test:
            facts.append(('self-test', 'the rqfast column runs RQ: ratios near 1.00 show the harness is fair'))
        started = time.monotonic()
        results: Results = {}
        for number, scenario in enumerate(scenarios, 1):
            print(f'[{number}/{len(scenarios)}] {scenario.name}', file=sys.stderr, flush=True)
            results.update(run_scenario(scenario, people, args.runs, target, scale.timeout))
        body = report.table(scenarios, results, people)
        note_lines = report.notes(scenarios, results, people)
        label = old.label if old else None
        peer_labels = [who.label for who in people if who.peer]
        elapsed = time.monotonic() - started
        return report.document(
            facts,
            body,
            note_lines,
            args.runs,
            elapsed,
            label,
            peer_labels if peers_rows else None,
            peer_labels if any(s.name.startswith('async-') and s.others for s in scenarios) else None,
        )
    finally:
        if server is not None:
            server.stop()


if __name__ == '__main__':
    sys.exit(main())
