"""RQ's `rq.local` (werkzeug's context locals): Local, LocalStack, LocalManager, LocalProxy, release_local.

rqfast itself keeps the current job in a contextvar (jobrun.py) and needs none of this; the module is
here for applications that import it from RQ. The storage is a ContextVar per object, so a value is
local to a thread, as in RQ, and also to an asyncio task (RQ's are shared by the tasks of a thread):
a task sees the values set before it was created, and what it sets stays in the task.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from itertools import count
from typing import Any

__all__ = ['Local', 'LocalManager', 'LocalProxy', 'LocalStack', 'release_local']

_serial = count()


def release_local(local: Local | LocalStack) -> None:
    """Forget what `local` holds in this context (a proxy cannot be released: release its local)."""
    local.__release_local__()


class Local:
    """Attributes with one value per context: `loc.user = u` here is unseen in another thread."""

    __slots__ = ('_values',)

    def __init__(self) -> None:
        values: ContextVar[dict[str, Any]] = ContextVar(f'rqfast.local.Local-{next(_serial)}')
        object.__setattr__(self, '_values', values)

    def _current(self) -> dict[str, Any]:
        values: ContextVar[dict[str, Any]] = object.__getattribute__(self, '_values')
        return values.get({})

    def _replace(self, new: dict[str, Any]) -> None:
        object.__getattribute__(self, '_values').set(new)

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._current().items())

    def __call__(self, name: str) -> LocalProxy:
        """A proxy for the attribute `name` of this local."""
        return LocalProxy(self, name)

    def __release_local__(self) -> None:
        self._replace({})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._current()[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._replace({**self._current(), name: value})  # a copy: a context's dict is never shared

    def __delattr__(self, name: str) -> None:
        values = self._current()
        if name not in values:
            raise AttributeError(name)
        self._replace({key: value for key, value in values.items() if key != name})


class LocalStack:
    """A stack per context; `stack()` is a proxy for its top item."""

    def __init__(self) -> None:
        self._local = Local()

    def __release_local__(self) -> None:
        self._local.__release_local__()

    def __call__(self) -> LocalProxy:
        def top_or_error() -> Any:
            item = self.top
            if item is None:
                raise RuntimeError('object unbound')
            return item

        return LocalProxy(top_or_error)

    def _items(self) -> list[Any]:
        return list(getattr(self._local, 'stack', ()))

    def push(self, obj: Any) -> list[Any]:
        """Push `obj`; the stack as it now is."""
        items = [*self._items(), obj]
        self._local.stack = items
        return items

    def pop(self) -> Any:
        """The top item, removed (None when empty); an emptied stack is released, as in RQ."""
        items = self._items()
        if not items:
            return None
        if len(items) == 1:
            release_local(self._local)
        else:
            self._local.stack = items[:-1]
        return items[-1]

    @property
    def top(self) -> Any:
        """The top item, or None."""
        items = self._items()
        return items[-1] if items else None

    def __len__(self) -> int:
        return len(self._items())


class LocalManager:
    """Releases a set of locals together (`cleanup()`, e.g. at the end of a request)."""

    def __init__(
        self, locals: Local | LocalStack | Iterable[Local | LocalStack] | None = None, ident_func: Any = None
    ) -> None:
        if locals is None:
            self.locals: list[Local | LocalStack] = []
        elif isinstance(locals, (Local, LocalStack)):
            self.locals = [locals]
        else:
            self.locals = list(locals)
        # RQ's locals are keyed by ident_func(); these follow the context, so it only answers get_ident().
        self.ident_func: Callable[[], Any] = ident_func or threading.get_ident

    def get_ident(self) -> Any:
        return self.ident_func()

    def cleanup(self) -> None:
        for local in self.locals:
            release_local(local)

    def __repr__(self) -> str:
        return f'<{type(self).__name__} storages: {len(self.locals)}>'


def _forward(op: Callable[..., Any]) -> Callable[..., Any]:
    """A method that applies `op` to the proxied object (and the method's other arguments)."""

    def method(self: LocalProxy, *args: Any, **kwargs: Any) -> Any:
        return op(self._get_current_object(), *args, **kwargs)

    return method


class LocalProxy:
    """Stands for an object found at each use: a Local's attribute (`LocalProxy(loc, 'user')`) or what a
    function returns (`LocalProxy(lambda: current_request().session)`); operations go to that object."""

    def __init__(self, local: Any, name: str | None = None) -> None:
        object.__setattr__(self, '_LocalProxy__local', local)
        object.__setattr__(self, '__name__', name)

    def _get_current_object(self) -> Any:
        """The object behind the proxy now (RuntimeError when a Local holds nothing under the name)."""
        local = object.__getattribute__(self, '_LocalProxy__local')
        if not hasattr(local, '__release_local__'):
            return local()
        name = object.__getattribute__(self, '__name__')
        try:
            return getattr(local, name)
        except AttributeError:
            raise RuntimeError(f'no object bound to {name}') from None

    @property  # the proxied object's, as RQ's proxy answers it
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        try:
            return self._get_current_object().__dict__  # type: ignore[no-any-return]
        except RuntimeError:
            raise AttributeError('__dict__') from None

    def __repr__(self) -> str:
        try:
            return repr(self._get_current_object())
        except RuntimeError:
            return f'<{type(self).__name__} unbound>'

    def __dir__(self) -> list[str]:
        try:
            return dir(self._get_current_object())
        except RuntimeError:
            return []

    def __bool__(self) -> bool:
        try:
            return bool(self._get_current_object())
        except RuntimeError:
            return False

    def __getattr__(self, name: str) -> Any:
        if name == '__members__':
            return dir(self._get_current_object())
        return getattr(self._get_current_object(), name)

    __setattr__ = _forward(setattr)
    __delattr__ = _forward(delattr)
    __setitem__ = _forward(operator.setitem)
    __delitem__ = _forward(operator.delitem)
    __getitem__ = _forward(operator.getitem)
    __contains__ = _forward(operator.contains)
    __call__ = _forward(lambda obj, *args, **kwargs: obj(*args, **kwargs))
    __len__ = _forward(len)
    __iter__ = _forward(iter)
    __str__ = _forward(str)
    __hash__ = _forward(hash)
    __lt__ = _forward(operator.lt)
    __le__ = _forward(operator.le)
    __eq__ = _forward(operator.eq)
    __ne__ = _forward(operator.ne)
    __gt__ = _forward(operator.gt)
    __ge__ = _forward(operator.ge)
    __add__ = _forward(operator.add)
    __sub__ = _forward(operator.sub)
    __mul__ = _forward(operator.mul)
    __truediv__ = _forward(operator.truediv)
    __floordiv__ = _forward(operator.floordiv)
    __mod__ = _forward(operator.mod)
    __divmod__ = _forward(divmod)
    __pow__ = _forward(pow)
    __lshift__ = _forward(operator.lshift)
    __rshift__ = _forward(operator.rshift)
    __and__ = _forward(operator.and_)
    __xor__ = _forward(operator.xor)
    __or__ = _forward(operator.or_)
    __neg__ = _forward(operator.neg)
    __pos__ = _forward(operator.pos)
    __abs__ = _forward(abs)
    __invert__ = _forward(operator.invert)
    __complex__ = _forward(complex)
    __int__ = _forward(int)
    __float__ = _forward(float)
    __index__ = _forward(operator.index)
    __enter__ = _forward(lambda obj: obj.__enter__())
    __exit__ = _forward(lambda obj, *args: obj.__exit__(*args))
