"""Dump a whole Redis db and normalise it, so what RQ wrote and what rqfast wrote compare field by field.

`snapshot(conn)` reads every key, type-aware, with its TTL. `normalize(snap, id_map)` replaces what
legitimately differs between two runs of the same calls (job ids, datetimes, epochs near now,
execution ids) by placeholders, and decodes `data`/`meta`/results so a mismatch reads as values, not
bytes. `implementation(name)` gives the API of `rq` or `rqfast` under one set of names, so a test can
run the same calls against either (RQFAST_TEST_IMPL=rq runs the suite against RQ itself).
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import os
import pickle
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import redis

# ---------------------------------------------------------------------------------------------------
# The module under test

REFERENCE = 'rq'
UNDER_TEST = os.environ.get('RQFAST_TEST_IMPL', 'rqfast')


def implementation(name: str) -> SimpleNamespace:
    """RQ's public names, taken from `rq` or `rqfast`."""
    top = importlib.import_module(name)
    job = importlib.import_module(f'{name}.job')
    queue = importlib.import_module(f'{name}.queue')
    registry = importlib.import_module(f'{name}.registry')

    def exported(attr: str, *modules: Any) -> Any:
        """The top-level name; the submodule's while the package's __init__ is unfinished."""
        for module in (top, *modules):
            if hasattr(module, attr):
                return getattr(module, attr)
        raise AttributeError(f'{name} has no {attr}')

    return SimpleNamespace(
        name=name,
        Queue=exported('Queue', queue),
        Job=job.Job,
        JobStatus=job.JobStatus,
        Retry=exported('Retry', job),
        Callback=exported('Callback', job),
        Repeat=exported('Repeat', importlib.import_module(f'{name}.repeat')),
        Dependency=job.Dependency,
        get_current_job=exported('get_current_job', job),
        cancel_job=exported('cancel_job', job),
        requeue_job=exported('requeue_job', job),
        registry=registry,
        StartedJobRegistry=registry.StartedJobRegistry,
        FinishedJobRegistry=registry.FinishedJobRegistry,
        FailedJobRegistry=registry.FailedJobRegistry,
        DeferredJobRegistry=registry.DeferredJobRegistry,
        ScheduledJobRegistry=registry.ScheduledJobRegistry,
        CanceledJobRegistry=registry.CanceledJobRegistry,
        Result=importlib.import_module(f'{name}.results').Result,
        serializers=importlib.import_module(f'{name}.serializers'),
        exceptions=importlib.import_module(f'{name}.exceptions'),
        job_decorator=importlib.import_module(f'{name}.decorators').job,
    )


# ---------------------------------------------------------------------------------------------------
# Raw dump


class Snapshot(dict):  # type: ignore[type-arg]
    """key -> {'type', 'ttl_ms', 'value'}; `taken_at` is the server's clock when the dump was taken."""

    taken_at: float = 0.0


def _text(value: bytes | str) -> str:
    return value.decode('utf-8', 'surrogateescape') if isinstance(value, bytes) else value


def snapshot(conn: redis.Redis) -> Snapshot:
    """Every key in the db, type-aware, with its TTL in milliseconds (-1 = none)."""
    seconds, micros = conn.time()
    snap = Snapshot()
    snap.taken_at = seconds + micros / 1e6
    for raw_key in sorted(conn.keys('*')):
        key = _text(raw_key)
        kind = _text(conn.type(raw_key))
        value: Any
        if kind == 'string':
            value = conn.get(raw_key)
        elif kind == 'hash':
            value = {_text(f): v for f, v in conn.hgetall(raw_key).items()}
        elif kind == 'list':
            value = conn.lrange(raw_key, 0, -1)
        elif kind == 'set':
            value = sorted(conn.smembers(raw_key))
        elif kind == 'zset':
            value = [(m, s) for m, s in conn.zrange(raw_key, 0, -1, withscores=True)]
        elif kind == 'stream':
            value = [{_text(f): v for f, v in fields.items()} for _id, fields in conn.xrange(raw_key)]
        else:  # pragma: no cover - RQ writes none of the other types
            value = f'<unhandled type {kind}>'
        snap[key] = {'type': kind, 'ttl_ms': conn.pttl(raw_key), 'value': value}
    return snap


# ---------------------------------------------------------------------------------------------------
# Normalisation


@dataclass(frozen=True)
class Near:
    """A number known only up to a tolerance: an epoch relative to the snapshot, or a TTL."""

    value: float
    label: str = 'now'
    tolerance: float = 2.0

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Near) or other.label != self.label:
            return NotImplemented
        return abs(self.value - other.value) <= max(self.tolerance, other.tolerance)

    def __hash__(self) -> int:
        return hash(self.label)

    def __repr__(self) -> str:
        if self.label == 'ttl':
            return f'<ttl ~{self.value:.0f}>'
        return f'<{self.label}{self.value:+.0f}>'


@dataclass(frozen=True)
class Blob:
    """Serializer bytes: the decoded value and a digest of the raw bytes; both must match."""

    decoded: Any
    raw_sha1: str
    encoding: str

    def __repr__(self) -> str:
        return f'{self.encoding}({self.decoded!r}, sha1={self.raw_sha1[:12]})'


UUID4_RE = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}')
HEX32_RE = re.compile(r'(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])')
DATETIME_RE = re.compile(r'\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z')
NUMBER_RE = re.compile(r'-?\d+(\.\d+)?([eE][-+]?\d+)?')
EPOCH_MIN, EPOCH_MAX = 1e9, 1e10  # 2001 .. 2286: numbers in that range are epochs

DATETIME_FIELDS = {'created_at', 'enqueued_at', 'started_at', 'ended_at', 'last_heartbeat'}
SERIALIZED_FIELDS = {'meta', 'result'}


def id_map_for(*jobs_or_ids: Any) -> dict[str, str]:
    """{job id: '<jobN>'} in the order given, so two runs map their ids alike."""
    mapping: dict[str, str] = {}
    for item in jobs_or_ids:
        job_id = item if isinstance(item, str) else item.id
        mapping.setdefault(job_id, f'<job{len(mapping)}>')
    return mapping


class _Normalizer:
    def __init__(self, id_map: Mapping[str, str], taken_at: float) -> None:
        self.id_map = dict(id_map)
        self.taken_at = taken_at
        ids = sorted(self.id_map, key=len, reverse=True)
        self.ids_re = (
            re.compile(r'(?<![A-Za-z0-9_-])(' + '|'.join(map(re.escape, ids)) + r')(?![A-Za-z0-9_-])') if ids else None
        )

    # text ------------------------------------------------------------------------------------------
    def text(self, value: bytes | str) -> Any:
        text = _text(value)
        if HEX32_RE.fullmatch(text):  # (before numbers: an id can be all decimal digits, 1 process in ~2,000)
            return '<hex>'
        if NUMBER_RE.fullmatch(text):
            number = float(text)
            if EPOCH_MIN <= abs(number) <= EPOCH_MAX:
                return self.epoch(number)
            return text
        if self.ids_re is not None:
            text = self.ids_re.sub(lambda m: self.id_map[m.group(1)], text)
        text = UUID4_RE.sub('<uuid>', text)
        text = HEX32_RE.sub('<hex>', text)
        text = DATETIME_RE.sub('<ts>', text)
        return text

    def epoch(self, number: float) -> Near:
        return Near(round(number - self.taken_at, 1))

    def score(self, score: float) -> Any:
        if score in (float('inf'), float('-inf')) or not EPOCH_MIN <= abs(score) <= EPOCH_MAX:
            return score
        return self.epoch(score)

    def ttl(self, ttl_ms: int) -> Any:
        if ttl_ms == -1:
            return 'none'
        return Near(ttl_ms / 1000, label='ttl')

    # decoded values ---------------------------------------------------------------------------------
    def deep(self, value: Any) -> Any:
        """Normalise ids and datetimes inside decoded structures."""
        if isinstance(value, (bytes, str)):
            return self.text(value)
        if isinstance(value, tuple):
            return tuple(self.deep(v) for v in value)
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        if isinstance(value, dict):
            return {self.deep(k): self.deep(v) for k, v in value.items()}
        return value

    def serialized(self, raw: bytes) -> Blob:
        if raw[:1] == b'\x80':
            try:
                return self.blob(pickle.loads(raw), raw, 'pickle')
            except Exception as exc:  # noqa: BLE001 - report it as a value
                return Blob(f'<unpicklable: {exc!r}>', hashlib.sha1(raw).hexdigest(), 'pickle')
        try:
            return self.blob(json.loads(raw), raw, 'json')
        except ValueError:
            return Blob(self.text(raw), hashlib.sha1(raw).hexdigest(), 'raw')

    def blob(self, decoded: Any, raw: bytes, encoding: str) -> Blob:
        """The raw digest is compared too, unless the value holds run-specific ids (then it must differ)."""
        normalised = self.deep(decoded)
        digest = hashlib.sha1(raw).hexdigest() if normalised == decoded else '<holds run-specific values>'
        return Blob(normalised, digest, encoding)

    def data(self, raw: bytes) -> dict[str, Any]:
        try:
            inner = zlib.decompress(raw)
            compressed = {'zlib_header': raw[:2].hex()}
        except zlib.error:
            inner = raw
            compressed = {'zlib_header': None}
        blob = self.serialized(inner)
        return {
            'call': blob.decoded,
            'encoding': blob.encoding,
            'raw_sha1': hashlib.sha1(raw).hexdigest() if blob.raw_sha1.isalnum() else blob.raw_sha1,
            **compressed,
        }

    def exc_text(self, text: str) -> str:
        """A traceback's frames differ between libraries; its first line and its exception do not."""
        lines = [line for line in text.strip().splitlines() if line.strip()]
        if len(lines) > 1 and lines[0].startswith('Traceback'):
            return self.text(f'{lines[0]} ... {lines[-1]}')
        return self.text(text)

    # per type ---------------------------------------------------------------------------------------
    def hash_field(self, field: str, raw: bytes) -> Any:
        if field == 'data':
            return self.data(raw)
        if field in SERIALIZED_FIELDS and raw:
            return self.serialized(raw)
        if field == 'exc_info' and raw:
            try:
                return {'zlib': self.exc_text(zlib.decompress(raw).decode())}
            except zlib.error:
                return {'plain': self.exc_text(_text(raw))}
        if field in ('dependency_ids', 'retry_intervals', 'repeat_intervals', 'webhooks') and raw:
            try:
                return {'json': self.deep(json.loads(raw))}
            except ValueError:
                return self.text(raw)
        return self.text(raw)

    def stream_field(self, field: str, raw: bytes) -> Any:
        if field == 'return_value':
            return self.serialized(base64.b64decode(raw))
        if field == 'exc_string':
            return self.exc_text(zlib.decompress(base64.b64decode(raw)).decode())
        return self.text(raw)

    def entry(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        kind, value = entry['type'], entry['value']
        out: Any
        if kind == 'string':
            out = self.text(value)
        elif kind == 'hash':
            out = {field: self.hash_field(field, raw) for field, raw in sorted(value.items())}
        elif kind == 'list':
            out = [self.text(item) for item in value]
        elif kind == 'set':
            out = sorted(self.text(member) for member in value)
        elif kind == 'zset':
            out = sorted(([self.text(m), self.score(s)] for m, s in value), key=lambda pair: str(pair[0]))
        elif kind == 'stream':
            out = [{field: self.stream_field(field, raw) for field, raw in sorted(e.items())} for e in value]
        else:
            out = value
        return {'type': kind, 'ttl': self.ttl(entry['ttl_ms']), 'value': out}


# rqfast also writes RQ 3.0's per-worker executions index (rq:worker:<name>:executions) so rq 3.0's
# readers see its running jobs; RQ 2.12 has no such key, so it is left out when the oracle is 2.x.
_RQ3_ONLY = re.compile(r'^rq:worker:.+:executions$')
_ORACLE_IS_RQ2 = importlib.import_module('rq').VERSION.startswith('2.')


def normalize(snap: Snapshot, id_map: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The snapshot with run-specific values replaced by placeholders (see the module docstring)."""
    normalizer = _Normalizer(id_map or {}, getattr(snap, 'taken_at', 0.0))
    out: dict[str, Any] = {}
    for key, entry in snap.items():
        if _ORACLE_IS_RQ2 and _RQ3_ONLY.match(key):
            continue
        name = normalizer.text(key)
        if name in out:
            raise AssertionError(f'two keys normalise to {name!r}: give their ids distinct placeholders')
        out[name] = normalizer.entry(entry)
    return out


# ---------------------------------------------------------------------------------------------------
# Comparison


def diff(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Readable differences between two normalised snapshots, key by key and field by field."""
    lines: list[str] = []
    for key in sorted(set(expected) | set(actual)):
        if key not in actual:
            lines.append(f'missing key {key}: {expected[key]!r}')
            continue
        if key not in expected:
            lines.append(f'extra key {key}: {actual[key]!r}')
            continue
        exp, act = expected[key], actual[key]
        if exp['type'] != act['type']:
            lines.append(f'{key}: type {act["type"]} != {exp["type"]}')
            continue
        if exp['ttl'] != act['ttl']:
            lines.append(f'{key}: ttl {act["ttl"]!r}, expected {exp["ttl"]!r}')
        ev, av = exp['value'], act['value']
        if ev == av:
            continue
        if exp['type'] == 'hash':
            for field in sorted(set(ev) | set(av)):
                if field not in av:
                    lines.append(f'{key}: missing field {field} = {ev[field]!r}')
                elif field not in ev:
                    lines.append(f'{key}: extra field {field} = {av[field]!r}')
                elif ev[field] != av[field]:
                    lines.append(f'{key}: field {field} = {av[field]!r}, expected {ev[field]!r}')
        else:
            lines.append(f'{key}: {act["type"]} value {av!r}, expected {ev!r}')
    return lines


def assert_same(expected: Mapping[str, Any], actual: Mapping[str, Any], what: str = '') -> None:
    differences = diff(expected, actual)
    assert not differences, f'{what} {UNDER_TEST} wrote a different db than {REFERENCE}:\n' + '\n'.join(differences)


def keys_of(snap: Iterable[str]) -> list[str]:
    return sorted(snap)


@contextmanager
def following_reference() -> Iterator[None]:
    """rqfast follows the RQ release installed as the reference (its RQFAST_COMPAT), as the oracle
    comparison needs: RQ 2.12 in the test venv, where RQ 3.0 changed behaviour rqfast follows by default."""
    from rqfast import defaults

    saved = defaults.RQFAST_COMPAT
    version = importlib.import_module(REFERENCE).__version__
    defaults.set_compat('2.12' if version.startswith('2.') else '3.0')
    try:
        yield
    finally:
        defaults.set_compat(saved)


def run_both(conn: redis.Redis, scenario: Callable[[Any, redis.Redis], tuple[list[Any], Any]]) -> dict[str, Any]:
    """Run `scenario(impl, conn)` with rq, then rqfast, each on a flushed db; the dbs and the answers must match.

    The scenario returns (jobs or ids whose ids differ between runs, in a fixed order; its answers).
    """
    dumps: dict[str, Any] = {}
    answers: dict[str, Any] = {}
    with following_reference():
        for name in (REFERENCE, UNDER_TEST):
            conn.flushdb()
            ids, answers[name] = scenario(implementation(name), conn)
            dumps[name] = normalize(snapshot(conn), id_map_for(*ids))
    conn.flushdb()
    assert dumps[REFERENCE], 'the scenario wrote nothing: it checks nothing'
    assert_same(dumps[REFERENCE], dumps[UNDER_TEST])
    assert answers[REFERENCE] == answers[UNDER_TEST]
    return dumps
