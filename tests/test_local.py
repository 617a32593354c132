"""rqfast.local answers as rq.local does (each test runs on both modules), and keeps values per
context: per thread as RQ's, and per asyncio task."""

from __future__ import annotations

import asyncio
import threading
from types import ModuleType
from typing import Any

import pytest
import rq.local

import rqfast.local


@pytest.fixture(params=['rq', 'rqfast'])
def local_module(request: pytest.FixtureRequest) -> ModuleType:
    return rq.local if request.param == 'rq' else rqfast.local


def in_thread(fn: Any) -> Any:
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(fn()))
    thread.start()
    thread.join()
    return box[0]


def test_local_attributes_belong_to_their_thread(local_module: ModuleType) -> None:
    loc = local_module.Local()
    loc.user = 'ann'
    assert loc.user == 'ann'
    assert in_thread(lambda: hasattr(loc, 'user')) is False
    assert in_thread(lambda: (setattr(loc, 'user', 'bob'), loc.user)[1]) == 'bob'
    assert loc.user == 'ann'
    del loc.user
    with pytest.raises(AttributeError):
        loc.user  # noqa: B018
    with pytest.raises(AttributeError):
        del loc.user


def test_rqfast_local_iterates_its_values_in_this_context() -> None:
    loc = rqfast.local.Local()
    loc.a, loc.b = 1, 2
    assert dict(loc) == {'a': 1, 'b': 2}


def test_release_local_forgets_this_contexts_values(local_module: ModuleType) -> None:
    loc = local_module.Local()
    loc.user = 'ann'
    local_module.release_local(loc)
    assert not hasattr(loc, 'user')
    loc.user = 'again'
    assert loc.user == 'again'


def test_local_stack(local_module: ModuleType) -> None:
    stack = local_module.LocalStack()
    assert (stack.top, stack.pop(), len(stack)) == (None, None, 0)
    assert stack.push(42) == [42]
    stack.push(23)
    assert (stack.top, len(stack)) == (23, 2)
    assert in_thread(lambda: (stack.top, len(stack))) == (None, 0)
    top = stack()
    assert top == 23 and top + 1 == 24
    assert (stack.pop(), stack.top, stack.pop(), stack.top, len(stack)) == (23, 42, 42, None, 0)
    with pytest.raises(RuntimeError, match='object unbound'):
        top._get_current_object()
    stack.push(1)
    local_module.release_local(stack)
    assert stack.top is None


def test_local_manager_cleans_up_its_locals(local_module: ModuleType) -> None:
    loc, stack = local_module.Local(), local_module.LocalStack()
    loc.x = 1
    stack.push(2)
    manager = local_module.LocalManager([loc, stack])
    assert repr(manager) == '<LocalManager storages: 2>'
    assert manager.get_ident() == threading.get_ident()
    manager.cleanup()
    assert (hasattr(loc, 'x'), stack.top) == (False, None)
    assert local_module.LocalManager(loc).locals == [loc]
    assert local_module.LocalManager().locals == []
    assert local_module.LocalManager(ident_func=lambda: 'mine').get_ident() == 'mine'


class Thing:
    def __init__(self) -> None:
        self.items: dict[str, int] = {'a': 1}
        self.name = 'thing'

    def __call__(self, x: int) -> int:
        return x * 2

    def __enter__(self) -> str:
        return 'entered'

    def __exit__(self, *args: Any) -> None:
        self.name = 'exited'


def test_local_proxy_forwards_to_the_bound_object(local_module: ModuleType) -> None:
    loc = local_module.Local()
    proxy = loc('thing')
    assert repr(proxy) == '<LocalProxy unbound>'
    with pytest.raises(RuntimeError, match='no object bound to thing'):
        proxy._get_current_object()
    assert dir(proxy) == []

    thing = Thing()
    loc.thing = thing
    assert proxy._get_current_object() is thing
    assert proxy.name == 'thing' and proxy(4) == 8 and proxy.__dict__ is thing.__dict__
    proxy.name = 'renamed'
    assert thing.name == 'renamed'
    with proxy as entered:
        assert entered == 'entered'
    assert thing.name == 'exited'
    del proxy.name
    assert not hasattr(thing, 'name')

    loc.thing = 7
    assert (proxy + 1, proxy - 1, proxy * 2, proxy // 2, proxy % 4, proxy**2, divmod(proxy, 2)) == (
        8,
        6,
        14,
        3,
        3,
        49,
        (3, 1),
    )
    assert (proxy / 2, proxy << 1, proxy >> 1, proxy & 3, proxy | 8, proxy ^ 1) == (3.5, 14, 3, 3, 15, 6)
    assert (-proxy, +proxy, abs(proxy), ~proxy, int(proxy), float(proxy), complex(proxy)) == (
        -7,
        7,
        7,
        -8,
        7,
        7.0,
        7 + 0j,
    )
    assert [1, 2, 3, 4, 5, 6, 7, 8][proxy] == 8 and hex(proxy) == '0x7'
    assert proxy == 7 and proxy != 8 and proxy < 8 and proxy <= 7 and proxy > 6 and proxy >= 7
    assert hash(proxy) == hash(7) and str(proxy) == '7' and repr(proxy) == '7'

    loc.thing = {'k': [1, 2]}
    assert proxy['k'] == [1, 2] and 'k' in proxy and len(proxy) == 1 and list(proxy) == ['k']
    proxy['j'] = 3
    del proxy['k']
    assert loc.thing == {'j': 3}


def test_a_proxy_of_a_function_calls_it_at_each_use(local_module: ModuleType) -> None:
    current = ['first']
    proxy = local_module.LocalProxy(lambda: current[0])
    assert proxy.upper() == 'FIRST'
    current[0] = 'second'
    assert proxy == 'second'


def test_an_unbound_rqfast_proxy_is_false() -> None:
    assert not rqfast.local.Local()('nothing')
    assert rqfast.local.LocalProxy(lambda: [1])


def test_rqfast_locals_belong_to_their_asyncio_task() -> None:
    loc = rqfast.local.Local()
    loc.request = 'outer'

    async def handler(name: str) -> tuple[str, str]:
        seen = loc.request
        loc.request = name
        await asyncio.sleep(0)
        return seen, loc.request

    async def main() -> list[tuple[str, str]]:
        return list(await asyncio.gather(handler('a'), handler('b')))

    assert asyncio.run(main()) == [('outer', 'a'), ('outer', 'b')]
    assert loc.request == 'outer'
