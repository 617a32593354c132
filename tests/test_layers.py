"""rqfast's modules form layers with no import loop (tests/import_graph.py reads the graph).

Every module imports alone, in a fresh interpreter, without the package's __init__ running first;
the graph read from the source (imports inside functions included, `if TYPE_CHECKING:` left out)
has no cycle; each module imports only from its own layer or the ones below (LAYERS), which
docs/layout.md's table shows; an import inside a function is one LATE_IMPORTS lists with its reason;
and no module, as it is imported, assigns to what another module defines.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import import_graph
import pytest

REPOSITORY = Path(__file__).resolve().parent.parent

# Run in a fresh interpreter: for each module, forget every rqfast module, put an empty `rqfast`
# package in place (so __init__, which imports most of the package, does not run first) and import
# the module. Prints {module: error} for those that fail.
_IMPORT_EACH_ALONE = textwrap.dedent(
    """
    import importlib, json, sys, traceback, types
    spec = importlib.util.find_spec('rqfast')
    errors = {}
    for name in json.loads(sys.argv[1]):
        for loaded in [m for m in sys.modules if m == 'rqfast' or m.startswith('rqfast.')]:
            del sys.modules[loaded]
        if name != 'rqfast':
            package = types.ModuleType('rqfast')
            package.__path__ = list(spec.submodule_search_locations)
            sys.modules['rqfast'] = package
        try:
            importlib.import_module(name)
        except BaseException:
            errors[name] = traceback.format_exc(limit=-3)
    print(json.dumps(errors))
    """
)


@pytest.mark.timeout(900)
def test_every_module_imports_alone_in_a_fresh_interpreter() -> None:
    modules = sorted(import_graph.module_names())
    result = subprocess.run(
        [sys.executable, '-c', _IMPORT_EACH_ALONE, json.dumps(modules)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=600,  # some 130 fresh imports: 15 s here, over 60 s on a loaded machine
        check=True,
    )
    errors = json.loads(result.stdout.strip().splitlines()[-1])
    assert not errors, '\n'.join(f'{name}:\n{error}' for name, error in errors.items())


def test_the_import_graph_has_no_cycle() -> None:
    cycle = import_graph.find_cycle(import_graph.import_graph())
    assert cycle is None, 'import loop: ' + ' -> '.join(cycle or [])


def test_every_module_imports_only_from_its_layer_or_below() -> None:
    graph = import_graph.import_graph()
    unplaced = []
    for module in graph:
        try:
            import_graph.layer_of(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f'modules missing from import_graph.LAYERS: {unplaced}'
    assert import_graph.layer_violations(graph) == []


def test_the_docs_layer_table_places_the_modules_as_layers_does() -> None:
    rows = re.findall(r'^\| (\w+) \| (`[^|]*`) \|', (REPOSITORY / 'docs' / 'layout.md').read_text(), re.MULTILINE)
    documented = [(layer, sorted(n.rstrip('/') for n in re.findall(r'`([^`]+)`', names))) for layer, names in rows]
    assert documented == [(layer, sorted(names)) for layer, names in import_graph.LAYERS]


def test_every_import_inside_a_function_is_listed_with_its_reason() -> None:
    """A new one fails here: import at the top, or list it in LATE_IMPORTS with why (optional, start-up cost)."""
    found = import_graph.late_imports()
    listed = {pair: count for pair, (count, _) in import_graph.LATE_IMPORTS.items()}
    assert {pair: n for pair, n in found.items() if listed.get(pair) != n} == {}, 'not in LATE_IMPORTS (or more)'
    assert {pair: n for pair, n in listed.items() if found.get(pair) != n} == {}, 'stale in LATE_IMPORTS'
    assert all(reason.strip() for _, reason in import_graph.LATE_IMPORTS.values())


def test_every_class_looked_up_by_dotted_path_is_listed_with_its_reason() -> None:
    """class_at('rqfast.…'): an arrow upward at run time. A new one fails here: list it in CLASS_LOOKUPS with why."""
    found = import_graph.class_lookups()
    assert set(found) == set(import_graph.CLASS_LOOKUPS), set(found) ^ set(import_graph.CLASS_LOOKUPS)
    assert all(count == 1 for count in found.values()), found
    assert all(reason.strip() for reason in import_graph.CLASS_LOOKUPS.values())


def test_every_type_only_import_that_closes_a_loop_is_listed_with_its_reason() -> None:
    """A new annotation of a class from a module that imports this one fails here: use a small Protocol
    (as worker_registration, suspension, executions and sync do), or list it in TYPE_ONLY_LOOPS with why."""
    loops = import_graph.type_only_loops(import_graph.import_graph())
    assert sorted(loops - set(import_graph.TYPE_ONLY_LOOPS)) == [], 'not in TYPE_ONLY_LOOPS'
    assert sorted(set(import_graph.TYPE_ONLY_LOOPS) - loops) == [], 'stale in TYPE_ONLY_LOOPS'


def _imported_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split('.')[0] for alias in node.names}
    return names


def _top_level_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """What runs as the module is imported: its statements and those of its if/try/with blocks."""
    found = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        found.append(node)
        for field in ('body', 'orelse', 'finalbody'):
            found += _top_level_statements(getattr(node, field, []))
        for handler in getattr(node, 'handlers', []):
            found += _top_level_statements(handler.body)
    return found


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


@pytest.mark.parametrize('path', sorted((REPOSITORY / 'rqfast').rglob('*.py')), ids=lambda p: p.name)
def test_no_module_assigns_to_another_modules_names_as_it_is_imported(path: Path) -> None:
    """`registry.BaseRegistry.queue_class = Queue` at the bottom of queue.py made behaviour depend on import
    order; a class a lower layer needs from a higher one is a dotted path (rqfast.defaults), looked up when used."""
    tree = ast.parse(path.read_text())
    imported = _imported_names(tree)
    writes = []
    for node in _top_level_statements(tree.body):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Attribute):  # Job.registry_classes.update(...)
                targets = [call.func.value]
            elif isinstance(call.func, ast.Name) and call.func.id == 'setattr' and call.args:
                targets = [ast.Attribute(value=call.args[0], attr='?')]
        for target in targets:
            if isinstance(target, ast.Attribute | ast.Subscript) and _root(target) in imported:
                writes.append(f'{path.name}:{node.lineno}: {ast.unparse(node)}')
    assert writes == []


def test_the_graph_counts_imports_inside_functions_but_not_type_checking_ones() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            from . import keys
            if TYPE_CHECKING:
                from .queue import Queue
            else:
                from .dates import now
            def f():
                from .registry import FailedJobRegistry
            """
        )
    )
    modules = {'rqfast', 'rqfast.keys', 'rqfast.queue', 'rqfast.dates', 'rqfast.registry', 'rqfast.job'}
    found = set()
    for node in import_graph._runtime_imports(tree):
        found |= import_graph._targets(node, 'rqfast.job', False, modules)
    assert found == {'rqfast.keys', 'rqfast.dates', 'rqfast.registry'}


def test_find_cycle_names_the_loop() -> None:
    graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
    assert import_graph.find_cycle(graph) == ['a', 'b', 'c', 'a']
    assert import_graph.find_cycle({'a': {'b'}, 'b': set()}) is None


def test_the_import_graph_script_runs() -> None:
    result = subprocess.run(
        [sys.executable, '-m', 'tests.import_graph'], capture_output=True, text=True, cwd=REPOSITORY, timeout=60
    )
    assert 'rqfast.job ' in result.stdout
    assert 'cycle: none' in result.stdout, result.stdout[-2000:]


# --- what the layers are for: no reaching into a Job's private fields, no key literal outside keys.py

_JOB_MODULES = {'job.py', 'jobspec.py', 'jobhash.py'}


def _sources() -> list[Path]:
    return sorted((REPOSITORY / 'rqfast').rglob('*.py'))


@pytest.mark.parametrize('path', _sources(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_no_module_but_the_job_modules_reaches_into_a_job(path: Path) -> None:
    """`job._status = ...` and the like: the Job has public ways to do those (set_local_status, ...)."""
    if path.name in _JOB_MODULES:
        return
    private = {name for name in vars(_job_class()) if name.startswith('_') and not name.startswith('__')}
    private |= {'_id', '_status', '_result', '_exc_info', '_dependency_ids', '_data'}
    reached = [
        f'{path.name}:{node.lineno}: {ast.unparse(node)}'
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id in ('self', 'cls'))
    ]
    assert reached == []


def _job_class() -> type:
    from rqfast.jobspec import JobSpec

    return JobSpec


@pytest.mark.parametrize('path', _sources(), ids=lambda p: str(p.relative_to(REPOSITORY)))
def test_every_key_name_comes_from_keys_py(path: Path) -> None:
    if path.name == 'keys.py' and path.parent.name == 'rqfast':
        return
    literals = []
    for node in ast.walk(ast.parse(path.read_text())):
        text = node.value if isinstance(node, ast.Constant) else None
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            text = node.values[0].value
        if isinstance(text, str) and text.startswith('rq:'):
            literals.append(f'{path.name}:{node.lineno}: {text!r}')
    assert literals == []
