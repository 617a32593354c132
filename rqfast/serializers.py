"""Job payload serializers: RQ's two, by the same names and aliases."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from functools import partial
from types import ModuleType
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

from .imports import import_attribute
from .text import json_module


@runtime_checkable
class Serializer(Protocol):
    def dumps(self, obj: Any, /) -> bytes: ...

    def loads(self, data: bytes, /) -> Any: ...


class DefaultSerializer:
    dumps: ClassVar[Callable[[Any], bytes]] = partial(pickle.dumps, protocol=pickle.HIGHEST_PROTOCOL)
    loads: ClassVar[Callable[[bytes], Any]] = pickle.loads


PickleSerializer = DefaultSerializer


class JSONSerializer:
    @staticmethod
    def dumps(obj: Any, *args: Any, **kwargs: Any) -> bytes:
        data: bytes = json_module().dumps(obj, *args, **kwargs).encode('utf-8')
        return data

    @staticmethod
    def loads(data: bytes, *args: Any, **kwargs: Any) -> Any:
        return json_module().loads(data.decode('utf-8'), *args, **kwargs)


SERIALIZER_ALIASES: dict[str, Any] = {'json': JSONSerializer, 'pickle': PickleSerializer}


def resolve_serializer(serializer: Any = None) -> Serializer:
    """A serializer object from None (pickle), an alias, a dotted path or the object itself."""
    if not serializer or serializer is PickleSerializer:
        return cast(Serializer, PickleSerializer)
    if serializer is JSONSerializer:
        return cast(Serializer, JSONSerializer)
    if isinstance(serializer, str):
        serializer = SERIALIZER_ALIASES.get(serializer) or import_attribute(serializer)
    if not isinstance(serializer, Serializer):
        raise NotImplementedError('Serializer should have (dumps, loads) methods.')
    return serializer


def serializer_path(serializer: Any = None) -> str | None:
    """How `serializer` is named in a setting: None, the alias or path given, a module's name, or a dotted path."""
    if serializer is None or isinstance(serializer, str):
        return serializer
    if isinstance(serializer, ModuleType):  # inspect.ismodule
        return serializer.__name__
    klass = serializer if isinstance(serializer, type) else type(serializer)
    return f'{klass.__module__}.{klass.__qualname__}'
