"""Opt-in job security: an allow-list of importable names and HMAC-signed payloads; sealed jobs.

- `JobPolicy(allow, signing_key)`: what a worker runs. `vet()` judges a claimed job from its stored
  fields before anything in it is deserialized or imported (its signature, then, with an
  allow-list, its function and callback names, the data read by a restricted unpickler); `arm()`
  makes the loaded job keep to the policy (every unpickle restricted, every import of a name it
  stores checked again).
- `sign_fields()`: the signature a producer stores in the job's `rqfast_signature` field (RQ
  ignores fields it does not know).
- `restore_sealed()`: how a worker process that does not run the job (the forking and spawn
  workers' parent, maintenance) loads one: `meta` and `result` stay the stored bytes (`Sealed`),
  written back unchanged, and the call is never deserialized.

docs/security.md has the threat model.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import pickle
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .defaults import SIGNATURE_FIELD, SIGNING_KEY_ENV
from .text import as_text

__all__ = [
    'SIGNATURE_FIELD',
    'JobPolicy',
    'JobRefused',
    'Sealed',
    'SealedPayloadError',
    'allowed',
    'restore_sealed',
    'sealed_fields',
    'sign_fields',
    'signing_key',
]

_SIGNED = ('data', 'success_callback_name', 'failure_callback_name', 'stopped_callback_name')
_VERSION = 'v1'

# Globals a restricted unpickler accepts besides the allow-list: value types of the stdlib that run
# nothing when built (so common arguments such as dates, decimals and UUIDs need no allow-listing).
SAFE_GLOBALS = frozenset(
    {
        'builtins.set',
        'builtins.frozenset',
        'builtins.bytearray',
        'builtins.complex',
        'builtins.range',
        'builtins.slice',
        'builtins.object',
        'copyreg._reconstructor',
        'datetime.date',
        'datetime.datetime',
        'datetime.time',
        'datetime.timedelta',
        'datetime.timezone',
        'decimal.Decimal',
        'fractions.Fraction',
        'uuid.UUID',
        'uuid.SafeUUID',
        'collections.OrderedDict',
        'collections.deque',
        'zoneinfo.ZoneInfo._unpickle',
        'zoneinfo._zoneinfo.ZoneInfo._unpickle',
    }
)


class JobRefused(Exception):
    """A job the worker's policy does not let run: unsigned, tampered, or naming something not allowed."""


class SealedPayloadError(Exception):
    """A sealed job's payload was asked for in a process that never deserializes it."""


def signing_key(key: str | bytes | None = None) -> bytes | None:
    """The key as bytes: the one given, else $RQFAST_SIGNING_KEY; None (no signing) when neither is set."""
    if key is None:
        key = os.environ.get(SIGNING_KEY_ENV) or None
    if key is None:
        return None
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, bytes) or not key:
        raise ValueError('signing_key: a non-empty str or bytes')
    return key


def _field(fields: Mapping[Any, Any], name: str) -> bytes | None:
    value = fields.get(name, fields.get(name.encode()))
    if value is None:
        return None
    return value if isinstance(value, bytes) else str(value).encode()


def _payload(stored: bytes) -> bytes:
    """The serialized call in a stored `data` field (zlib'ed by RQ and rqfast; raw if not)."""
    try:
        return zlib.decompress(stored)
    except zlib.error:
        return stored


def sign_fields(key: bytes, job_id: str, fields: Mapping[Any, Any]) -> str:
    """The signature of a job's stored fields: HMAC-SHA256 over its id, its serialized call (`data`,
    decompressed: a re-compression by another client does not break it) and its callback names."""
    mac = hmac.new(key, f'rqfast-job-{_VERSION}'.encode(), hashlib.sha256)
    parts = [job_id.encode(), *(_field(fields, name) or b'' for name in _SIGNED)]
    parts[1] = _payload(parts[1])
    for part in parts:
        mac.update(len(part).to_bytes(8, 'big'))
        mac.update(part)
    return f'{_VERSION}:{mac.hexdigest()}'


def allowed(name: str, allow: Iterable[str]) -> bool:
    """Whether dotted `name` is an allow-list entry or lies under one (a module prefix); a bare
    name is a builtin (RQ runs 'len' as builtins.len)."""
    if '.' not in name:
        name = f'builtins.{name}'
    return any(name == entry or name.startswith(entry + '.') for entry in allow)


def canonical_name(obj: Any) -> str:
    """Where an object is defined (`module.qualname`; a callable instance: its class's)."""
    if getattr(obj, '__qualname__', None) is None or getattr(obj, '__module__', None) is None:
        obj = type(obj)
    return f'{obj.__module__}.{obj.__qualname__}'


def _resolved_refusal(name: str, obj: Any, allow: tuple[str, ...]) -> str | None:
    """Why `obj`, found at allowed `name`, is not allowed: a name that reaches past an allowed module
    into another (`myapp.tasks.os.system`) must be allowed where the object is defined too."""
    where = canonical_name(obj)
    if allowed(where, allow):
        return None
    return f'{name} is {where}, which is not in the allow-list'


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, allow: tuple[str, ...]) -> None:
        super().__init__(io.BytesIO(data))
        self.allow = allow

    def find_class(self, module: str, name: str) -> Any:
        dotted = f'{module}.{name}'
        if dotted in SAFE_GLOBALS:
            return super().find_class(module, name)
        if not allowed(dotted, self.allow):
            raise JobRefused(f'its payload names {dotted}, which is not in the allow-list')
        found = super().find_class(module, name)
        reason = _resolved_refusal(dotted, found, self.allow)
        if reason:
            raise JobRefused(f'its payload names {reason}')
        return found


class SignedCallSerializer:
    """Pickle for a signed job in a worker with a signing key and no allow-list: the job's signed call
    (`data`, checked against its signature) is unpickled as it is; every other pickle the job loads
    (its `meta`, a result read back, a dependency's data or return value) is restricted to SAFE_GLOBALS,
    so a pickle nobody signed cannot run code, in the worker or in a horse."""

    def __init__(self, serializer: Any, signed: bytes | None) -> None:
        self.serializer = serializer
        self.signed = signed  # the serialized call whose signature matched (None: none did)

    def dumps(self, obj: Any) -> bytes:
        data: bytes = self.serializer.dumps(obj)
        return data

    def loads(self, data: bytes) -> Any:
        if self.signed is not None and data == self.signed:
            return self.serializer.loads(data)
        try:
            return _RestrictedUnpickler(data, ()).load()
        except JobRefused as exc:
            raise JobRefused(f'{exc} (an unsigned pickle, loaded restricted: the worker has a signing key)') from None


class RestrictedSerializer:
    """A pickle serializer that unpickles only globals in the allow-list (or SAFE_GLOBALS)."""

    def __init__(self, serializer: Any, allow: tuple[str, ...]) -> None:
        self.serializer = serializer
        self.allow = allow

    def dumps(self, obj: Any) -> bytes:
        data: bytes = self.serializer.dumps(obj)
        return data

    def loads(self, data: bytes) -> Any:
        return _RestrictedUnpickler(data, self.allow).load()


def _is_pickle(serializer: Any) -> bool:
    return getattr(serializer, 'loads', None) is pickle.loads


@dataclass(frozen=True)
class JobPolicy:
    """What a worker lets run: names under `allow` (None: any) and, with a `signing_key`, signed jobs only."""

    allow: tuple[str, ...] | None = None
    signing_key: bytes | None = None

    @classmethod
    def make(cls, allow: Iterable[str] | str | None = None, key: str | bytes | None = None) -> JobPolicy | None:
        """The policy for a worker's arguments (the key from $RQFAST_SIGNING_KEY if not given); None when off."""
        if isinstance(allow, str):
            allow = [allow]
        entries = None
        if allow is not None:
            entries = tuple(entry.strip().rstrip('.') for entry in allow)
            if not all(entries):
                raise ValueError('allow: entries are dotted module prefixes or names, not empty strings')
        policy = cls(entries, signing_key(key))
        return policy if policy.allow is not None or policy.signing_key is not None else None

    def serializer(self, serializer: Any, job_id: str | None = None, raw: Mapping[Any, Any] | None = None) -> Any:
        """The serializer a job runs with: pickle restricted to the allow-list when there is one; with a
        signing key only, pickle restricted but for the job's call when its signature matches (`raw`)."""
        if not _is_pickle(serializer):
            return serializer
        if self.allow is not None:
            return RestrictedSerializer(serializer, self.allow)
        if self.signing_key is not None:
            fine = job_id is not None and raw is not None and self.check_signature(job_id, raw) is None
            return SignedCallSerializer(serializer, _payload(_field(raw or {}, 'data') or b'') if fine else None)
        return serializer

    def check_signature(self, job_id: str, raw: Mapping[Any, Any]) -> str | None:
        """Why the stored fields fail the signature check (None: they pass, or no key)."""
        if self.signing_key is None:
            return None
        stored = _field(raw, SIGNATURE_FIELD)
        if not stored:
            return f'it is not signed ({SIGNATURE_FIELD} is missing) and this worker runs signed jobs only'
        expected = sign_fields(self.signing_key, job_id, raw)
        if not hmac.compare_digest(expected.encode(), stored):
            return 'its signature does not match its payload (tampered, or signed with another key)'
        return None

    def check_name(self, name: str) -> str | None:
        if self.allow is not None and not allowed(name, self.allow):
            return f'{name} is not in the allow-list'
        return None

    def check_call(self, job_id: str, raw: Mapping[Any, Any], serializer: Any) -> str | None:
        """Why the job's function or callbacks are not allowed, read without importing them (None: allowed)."""
        if self.allow is None:
            return None
        for kind in ('success', 'failure', 'stopped'):
            name = as_text(_field(raw, f'{kind}_callback_name') or b'')
            if name and (reason := self.check_name(name)):
                return f'its {kind} callback {reason}'
        try:
            func_name, instance, _, _ = self.serializer(serializer).loads(_payload(_field(raw, 'data') or b''))
        except JobRefused as exc:
            return str(exc)
        except Exception as exc:  # undecodable: the run fails on it as it would without a policy
            return f'its data cannot be read: {type(exc).__name__}: {exc}'
        return self.check_name(_call_name(func_name, instance))

    def vet(self, job_id: str, raw: Mapping[Any, Any], serializer: Any) -> str | None:
        """Why the job is refused (None: it may run), judged before anything in it is loaded."""
        reason = self.check_signature(job_id, raw) or self.check_call(job_id, raw, serializer)
        return None if reason is None else refusal(job_id, reason)

    def arm(self, job: Any, raw: Mapping[Any, Any]) -> None:
        """Keep a loaded job to the policy: restricted unpickling, and each name it imports checked first."""
        job.serializer = self.serializer(job.serializer, job.id, raw)
        job.import_guard = _Guard(self, job.id, raw)


def refusal(job_id: str, reason: str) -> str:
    return f"rqfast: job {job_id} was refused by the worker's job policy, so it was not run: {reason}\n"


def _call_name(func_name: Any, instance: Any) -> str:
    if instance is not None:
        klass = type(instance)
        return f'{klass.__module__}.{klass.__qualname__}.{func_name}'
    return str(func_name)


class _Guard:
    """Called with each name a job imports (its function, a callback): JobRefused unless the policy allows it."""

    def __init__(self, policy: JobPolicy, job_id: str, raw: Mapping[Any, Any]) -> None:
        self.policy = policy
        self.job_id = job_id
        self.signature_problem = policy.check_signature(job_id, raw)

    def __call__(self, name: str, instance: Any = None, resolved: Any = None) -> None:
        """Before an import (and with `resolved`, after it: the object must be allowed where it is defined)."""
        reason = self.signature_problem or self.policy.check_name(_call_name(name, instance))
        if not reason and resolved is not None and self.policy.allow is not None:
            reason = _resolved_refusal(name, resolved, self.policy.allow)
        if reason:
            raise JobRefused(refusal(self.job_id, reason).strip())


# --- sealed jobs: loaded by a process that never deserializes their payload


class Sealed:
    """A stored `meta` or `result`, kept as its bytes: written back unchanged, never deserialized."""

    __slots__ = ('stored',)

    def __init__(self, stored: bytes) -> None:
        self.stored = stored

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f'<Sealed {len(self.stored)} bytes: not deserialized in the worker process>'


class SealedSerializer:
    """The serializer of a sealed job: Sealed values pass through; nothing is ever loaded."""

    def __init__(self, serializer: Any) -> None:
        self.serializer = serializer

    def dumps(self, obj: Any) -> bytes:
        if isinstance(obj, Sealed):
            return obj.stored
        data: bytes = self.serializer.dumps(obj)
        return data

    def loads(self, data: bytes) -> Any:
        raise SealedPayloadError(
            "the worker process never deserializes a job's data, meta or result (only its horse does); "
            'fetch the job (Job.fetch) to read them in this process'
        )


def is_sealed(job: Any) -> bool:
    return isinstance(getattr(job, 'serializer', None), SealedSerializer)


def sealed_fields(raw: Mapping[Any, Any]) -> dict[str, Any]:
    """The stored fields a sealed load parses (all but meta and result)."""
    return {name: value for name, value in ((as_text(k), v) for k, v in raw.items()) if name not in ('meta', 'result')}


def restore_sealed(job: Any, raw: Mapping[Any, Any]) -> None:
    """Load a job from its stored fields without deserializing its call, `meta` or `result`."""
    fields = sealed_fields(raw)
    meta, result = _field(raw, 'meta'), _field(raw, 'result')
    if not is_sealed(job):
        job.serializer = SealedSerializer(job.serializer)
    job.restore(fields)
    if meta:
        job.meta = Sealed(meta)
    if result:
        job.set_local_result(Sealed(result))
