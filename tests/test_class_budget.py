"""Classes by responsibility, not by line count: a budget of methods per class, and no base class made to
move lines.

A class's own methods are those it and the rqfast classes in its MRO define (functions, properties, class
and static methods; not dunders): a base class in another file does not make a class smaller. Those RQ's
class of the same name has (the class's, one of its bases', or, for a base, its subclass's: rq 2.12, which
the tests install) are RQ's API and not counted. No class goes over BUDGET; when one would, the new work
goes to an object it holds (as the worker's Recorder, the queue's DependentsRelease). Files have no line
limit: a file is as long as the one class it holds.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator

import rq

import rqfast
from rqfast.job import Job
from rqfast.queue import Queue

BUDGET = 60  # methods of its own beyond RQ's API, per class (the largest today: SpawnWorker's, about 40)

# The rqfast base classes of RQ's Queue and Job, and what each holds that the class itself does not.
BASES = {
    Queue: {},
    Job: {
        'JobSpec': "the job as a value, without Redis (jobspec.py): what the storage modules' functions take",
        'JobRecord': "every stored field of rq:job:<id> and its codec (jobhash.py), the hash's one mapping",
    },
}


def _modules(package: object, prefix: str) -> Iterator[object]:
    for info in pkgutil.walk_packages(package.__path__, prefix):  # type: ignore[attr-defined]
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # an optional extra's module (the dashboard's) without the extra
            continue


def rq_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in _modules(rq, 'rq.'):
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__.startswith('rq.'):
                found.setdefault(name, value)
    return found


def rqfast_classes() -> list[type]:
    found: list[type] = []
    for module in _modules(rqfast, 'rqfast.'):
        for value in vars(module).values():
            if inspect.isclass(value) and value.__module__ == module.__name__ and value not in found:  # type: ignore[attr-defined]
                found.append(value)
    return found


def own_methods(klass: type) -> set[str]:
    names: set[str] = set()
    for base in klass.__mro__:
        if not base.__module__.startswith('rqfast'):
            continue
        for name, value in vars(base).items():
            if name.startswith('__') and name.endswith('__'):
                continue
            if inspect.isfunction(value) or isinstance(value, property | classmethod | staticmethod):
                names.add(name)
    return names


def _subclasses(klass: type) -> Iterator[type]:
    for sub in klass.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def beyond_rq(klass: type, rqs: dict[str, type]) -> set[str]:
    """The class's own methods that RQ's counterpart (found through its MRO, then its subclasses) lacks."""
    related = [k for k in [*klass.__mro__, *_subclasses(klass)] if k.__module__.startswith('rqfast')]
    counterpart = next((rqs[k.__name__] for k in related if k.__name__ in rqs), None)
    return own_methods(klass) - set(dir(counterpart) if counterpart is not None else ())


def test_no_class_has_more_methods_of_its_own_than_the_budget() -> None:
    rqs = rq_classes()
    counts = {f'{k.__module__}.{k.__qualname__}': len(beyond_rq(k, rqs)) for k in rqfast_classes()}
    assert len(counts) > 200  # (the scan found the package's classes)
    over = {name: count for name, count in counts.items() if count > BUDGET}
    assert over == {}, over


def test_the_count_sees_a_base_class_in_another_file() -> None:
    class Base:
        def a(self) -> None: ...

        @property
        def b(self) -> int:
            return 1

    class Derived(Base):
        def c(self) -> None: ...

        def enqueue(self) -> None: ...  # RQ's Queue has it

    Base.__module__ = Derived.__module__ = 'rqfast.example'
    Derived.__name__ = 'Queue'
    assert beyond_rq(Derived, rq_classes()) == {'a', 'b', 'c'}


def test_queue_and_job_have_no_base_class_but_those_listed_with_what_they_hold() -> None:
    for klass, bases in BASES.items():
        found = [k.__name__ for k in klass.__mro__[1:] if k.__module__.startswith('rqfast')]
        assert found == list(bases), (klass, found)
