"""rqfast's import graph, read from the source: `python -m tests.import_graph` prints it.

Every import counts, including those inside function bodies; only imports under `if TYPE_CHECKING:`
are left out (they never run). LAYERS is the one table of which module may import which:
a module imports only from its own layer or the layers below it. tests/test_layers.py asserts
that the graph has no cycle and keeps to the layers, that docs/layout.md's table places the same
modules, and that every import inside a function is one LATE_IMPORTS lists, with its reason.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = 'rqfast'
ROOT = Path(__file__).resolve().parent.parent / PACKAGE

# Bottom-up. A name covers the module and, for a subpackage, every module in it ('worker' is
# rqfast.worker and rqfast.worker.*). 'rqfast' is the package itself: its __init__ re-exports the API.
LAYERS: list[tuple[str, list[str]]] = [
    (
        'leaves',
        [
            'status',
            'keys',
            'dates',
            'defaults',
            'text',
            'exceptions',
            'redis_errors',
            'imports',
            'serializers',
            'timeouts',
            'backoff',
            'repeat',
            'version',
            'outcome',
            'contrib',
            'connections',
            'cluster',
            'suspension',
            'types',
            'logutils',
            'webhook',
            'worker_registration',
            'local',
            'cron_job_registry',
            'cron_scheduler_registry',
            'cronconfig',
            'security',
            'pipes',
            'tracing',
            'capture',
            'as_rq',
            'rq_interop',
            'listener',
        ],
    ),
    (
        'storage',
        ['jobhash', 'scriptload', 'scriptrecords', 'scripts', 'workerscripts', 'intermediate_queue', 'rate_limit'],
    ),
    ('results', ['results', 'events']),
    (
        'job',
        [
            'joboptions',
            'options',
            'callbacks',
            'jobspec',
            'jobrun',
            'debounce',
            'enqueueing',
            'dependencies',
            'job',
            'command',
            'dependency',
        ],
    ),
    ('outcomes', ['planning', 'execution', 'engine', 'job_lifecycle']),
    ('runners', ['maintenance', 'sync', 'orphaned', 'horse']),
    ('registry', ['registry', 'executions', 'scheduler']),
    ('queue', ['dependents', 'queue', 'decorators', 'contrib.sentry']),
    ('group', ['group']),
    ('cron', ['cron_record', 'cron_enqueue', 'cron_slots', 'cron']),
    ('asyncio', ['asyncio']),
    ('worker', ['worker', 'worker_pool', 'metrics']),
    ('surface', ['utils']),
    ('dashboard', ['dashboard']),
    ('cli', ['cli', '__main__']),
    ('api', [PACKAGE]),
]

# Imports inside a function body, the only ones allowed: (module, what it imports) -> (how many such
# statements, why). A reason is an optional dependency or a start-up cost: a spawned child
# (rqfast/horse.py) imports only what running its job needs (no redis-py for a job that never uses
# Redis: tests/test_worker_spawn.py), and `import rqfast` no more than its API needs. Each is one
# function that hands out the module (jobrun.scripts(), jobhash.webhook_module(), ...), so one deferred
# module is one statement. tests/test_layers.py fails on an import inside a function not listed here,
# and on an entry no longer found (delete it). A class a lower layer needs from a higher one is named
# by a dotted path instead (rqfast.defaults.REGISTRY_CLASSES), never imported in a function; so are
# the base classes rqfast.utils' import_*_class check against (RQ's rq.utils, which a job may import).
_CHILD = 'start-up cost: a spawned child (rqfast/horse.py) '
LATE_IMPORTS: dict[tuple[str, str], tuple[int, str]] = {
    ('rqfast.as_rq', 'logging'): (1, _CHILD + 'whose job logs nothing never imports logging (re, traceback: 7 ms)'),
    ('rqfast.as_rq', 'site'): (1, _CHILD + 'runs without `site` (-S): only `rqfast doctor` reads its folders'),
    ('rqfast.callbacks', 'inspect'): (1, _CHILD + 'whose job has no callback never imports inspect (ast, dis: 3 ms)'),
    ('rqfast.cluster', 'inspect'): (1, _CHILD + 'never imports inspect unless sharded by queue (3 ms)'),
    ('rqfast.text', 'traceback'): (1, _CHILD + 'whose job succeeds never formats a traceback (2 ms)'),
    ('rqfast.text', 'json'): (
        1,
        _CHILD + 'whose job has no JSON field (retries, dependencies, webhooks) never imports json',
    ),
    ('rqfast.horse', 'rqfast.connections'): (1, _CHILD + 'whose job never uses Redis builds no client (no redis-py)'),
    ('rqfast.exceptions', 'rqfast.redis_errors'): (
        1,
        _CHILD + "imports rqfast.exceptions; its errors of a full or silent Redis subclass redis-py's",
    ),
    ('rqfast.job', 'rqfast.results'): (1, _CHILD + 'loads a Job; only reading or writing its results needs them'),
    ('rqfast.joboptions', 'random'): (1, _CHILD + 'never imports random (bisect, hashlib) unless a Retry has jitter'),
    ('rqfast.jobhash', 'rqfast.webhook'): (
        1,
        _CHILD + 'whose job has no webhooks never imports them (nor dataclasses)',
    ),
    ('rqfast.jobrun', 'asyncio'): (1, _CHILD + 'that runs no coroutine never imports asyncio (13 ms)'),
    ('rqfast.jobrun', 'rqfast.scripts'): (1, _CHILD + 'whose job writes nothing loads no script (nor redis-py)'),
    ('rqfast.metrics', 'prometheus_client.core'): (1, 'optional dependency: only when metrics are asked for'),
    ('rqfast.cli.dashboard', 'rqfast.dashboard.server'): (1, "optional dependency: the dashboard's extra"),
    ('rqfast.orphaned', 'rqfast.engine'): (1, _CHILD + 'records its own outcome only when its worker died (13 ms)'),
    ('rqfast.utils', 'redis.exceptions'): (1, "start-up cost: a job importing RQ's rq.utils helpers loads no redis-py"),
    ('rqfast.webhook', 'urllib.request'): (1, 'start-up cost: 15 ms that only a worker sending a webhook pays'),
}

# The classes looked up by dotted path when first used (rqfast.imports.class_at), the run-time arrows a
# lower module draws to a higher one without importing it: (module, class_at's argument as written) -> why.
# tests/test_layers.py fails on a lookup not listed here, and on an entry no longer found.
CLASS_LOOKUPS: dict[tuple[str, str], str] = {
    ('rqfast.job', "REGISTRY_CLASSES['executions']"): (
        'Job.execution_registry makes an ExecutionRegistry, a layer above (registries load Jobs)'
    ),
    ('rqfast.job', 'REGISTRY_CLASSES[kind]'): (
        "Job's started/failed/finished_job_registry make RQ's registries, a layer above (registries load Jobs)"
    ),
    ('rqfast.registry', 'REGISTRY_QUEUE_CLASS'): (
        "a registry's get_queue() makes a Queue, a layer above (a queue makes its registries)"
    ),
    ('rqfast.utils', "'rqfast.job.Job'"): "start-up cost: a job importing RQ's rq.utils helpers loads no Job",
    ('rqfast.utils', "'rqfast.queue.Queue'"): 'start-up cost: a job importing rq.utils loads no Queue (nor redis-py)',
    ('rqfast.utils', "'rqfast.worker.BaseWorker'"): 'start-up cost: a job importing rq.utils loads no worker',
}

# Type-only imports (under `if TYPE_CHECKING:`) that close a loop: the module annotates with a class
# whose module imports it at run time. (module, what it imports) -> why no small protocol replaces it.
# tests/test_layers.py fails on a loop not listed here, and on an entry no longer found.
TYPE_ONLY_LOOPS: dict[tuple[str, str], str] = {
    ('rqfast.command', 'rqfast.worker'): "RQ's command handlers act on the worker itself (six of its members)",
    ('rqfast.dependencies', 'rqfast.job'): "Job.dependencies_are_met's body, typed as the Job it serves",
    ('rqfast.intermediate_queue', 'rqfast.queue'): "RQ's IntermediateQueue.cleanup(worker, queue)",
    ('rqfast.intermediate_queue', 'rqfast.worker'): "RQ's IntermediateQueue.cleanup(worker, queue)",
    ('rqfast.registry', 'rqfast.queue'): "RQ's registry.get_queue() returns a Queue (queue_class= names one)",
    ('rqfast.results', 'rqfast.job'): "RQ's Result is written for and read from a Job",
    ('rqfast.types', 'rqfast.job'): "RQ's type aliases (rq.types) name Job",
}


def module_names() -> dict[str, Path]:
    """Every module of the package by dotted name; a package by its own name (its __init__)."""
    names: dict[str, Path] = {}
    for path in sorted(ROOT.rglob('*.py')):
        parts = list(path.relative_to(ROOT.parent).with_suffix('').parts)
        if parts[-1] == '__init__':
            parts.pop()
        names['.'.join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == 'TYPE_CHECKING') or (
        isinstance(test, ast.Attribute) and test.attr == 'TYPE_CHECKING'
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: all but the bodies of `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _ancestors(name: str) -> set[str]:
    parts = name.split('.')
    return {'.'.join(parts[:i]) for i in range(1, len(parts))}


def _targets(node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, modules: set[str]) -> set[str]:
    """The package's modules one import statement runs."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name in modules}
    base = node.module or ''
    if node.level:
        package = importer.split('.') if is_package else importer.split('.')[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = '.'.join(package + ([base] if base else []))
    if base not in modules:
        return set()
    targets: set[str] = set()
    for alias in node.names:
        submodule = f'{base}.{alias.name}'
        # `from pkg import submodule` runs the submodule; `from pkg import name` runs pkg's __init__
        targets.add(submodule if submodule in modules else base)
    return targets


def import_graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports at run time.

    Importing `a.b.c` runs `a.b`'s __init__ first, so that is an edge too, except where `a.b` is an
    ancestor of the importer (Python has imported it already) or the package root (likewise). An
    ancestor is an edge only where the module takes a name from it (`from . import name`).
    """
    paths = module_names()
    modules = set(paths)
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == '__init__.py'
        edges: set[str] = set()
        for node in _runtime_imports(tree):
            for target in _targets(node, name, is_package, modules):
                edges |= {target} | (_ancestors(target) - _ancestors(name) - {PACKAGE})
        graph[name] = edges - {name}
    return graph


def type_only_imports() -> set[tuple[str, str]]:
    """(module, the package's module it imports) for every import under `if TYPE_CHECKING:`."""
    paths = module_names()
    modules = set(paths)
    found: set[tuple[str, str]] = set()
    for name, path in paths.items():
        is_package = path.name == '__init__.py'
        for block in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(block, ast.If) and _is_type_checking(block.test)):
                continue
            for node in (n for statement in block.body for n in ast.walk(statement)):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    found |= {(name, target) for target in _targets(node, name, is_package, modules) - {name}}
    return found


def type_only_loops(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The type-only imports `a -> b` where b imports a at run time, directly or not."""
    loops = set()
    for module, target in type_only_imports():
        seen: set[str] = set()
        todo = [target]
        while todo:
            for imported in graph.get(todo.pop(), ()):
                if imported not in seen:
                    seen.add(imported)
                    todo.append(imported)
        if module in seen:
            loops.add((module, target))
    return loops


def class_lookups() -> dict[tuple[str, str], int]:
    """(module, class_at's argument as written) -> how many class_at calls in the module pass it."""
    found: dict[tuple[str, str], int] = {}
    for name, path in module_names().items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, 'attr', '')
            if called == 'class_at':
                key = (name, ast.unparse(node.args[0]))
                found[key] = found.get(key, 0) + 1
    return found


def late_imports() -> dict[tuple[str, str], int]:
    """(module, what it imports) -> how many import statements inside function bodies import it.

    What is imported is the package's module the statement runs, or else the module it names.
    """
    paths = module_names()
    modules = set(paths)
    found: dict[tuple[str, str], int] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == '__init__.py'
        statements = {
            node
            for function in ast.walk(tree)
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
            for node in ast.walk(function)
            if isinstance(node, ast.Import | ast.ImportFrom)
        }
        for node in statements:
            targets = _targets(node, name, is_package, modules)
            if not targets:
                targets = {alias.name for alias in node.names} if isinstance(node, ast.Import) else {node.module or ''}
            for target in targets:
                found[name, target] = found.get((name, target), 0) + 1
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def layer_of(module: str) -> int:
    """The index in LAYERS of a module (the longest entry naming it: 'contrib.sentry' before 'contrib');
    KeyError for a module the table does not place."""
    relative = module[len(PACKAGE) + 1 :] if module != PACKAGE else PACKAGE
    matches = [
        (len(entry), index)
        for index, (_, names) in enumerate(LAYERS)
        for entry in names
        if relative == entry or relative.startswith(entry + '.')
    ]
    if not matches:
        raise KeyError(module)
    return max(matches)[1]


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """`a (layer) -> b (layer)` for every import of a module from a higher layer."""
    problems = []
    for module in sorted(graph):
        for target in sorted(graph[module]):
            if layer_of(target) > layer_of(module):
                problems.append(
                    f'{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})'
                )
    return problems


def main() -> int:
    """Print each module (bottom-up, with its layer and length) and what it imports; then any cycle."""
    graph = import_graph()
    paths = module_names()
    unplaced = [module for module in graph if _safe_layer(module) == len(LAYERS)]
    for module in sorted(graph, key=lambda m: (_safe_layer(m), m)):
        layer = _safe_layer(module)
        label = LAYERS[layer][0] if layer < len(LAYERS) else 'NOT IN LAYERS'
        size = f'{len(paths[module].read_text().splitlines())} lines'  # (no limit: tests/test_class_budget.py)
        print(f'{module:24s} [{label}] {size}\n    -> {", ".join(sorted(graph[module])) or "-"}')
    cycle = find_cycle(graph)
    print('\ncycle:', ' -> '.join(cycle) if cycle else 'none')
    placed = {m: {t for t in targets if t not in unplaced} for m, targets in graph.items() if m not in unplaced}
    violations = layer_violations(placed)
    print('layer violations:', '\n  ' + '\n  '.join(violations) if violations else 'none')
    if unplaced:
        print('not in LAYERS:', ', '.join(sorted(unplaced)))
    late = late_imports()
    print(f'imports inside functions: {sum(late.values())} ({len(late)} module pairs; LATE_IMPORTS gives why)')
    lookups = class_lookups()
    print(f'classes looked up by dotted path: {sum(lookups.values())} (CLASS_LOOKUPS gives why)')
    typed = type_only_imports()
    upward = sorted(f'{a} -> {b}' for a, b in typed if _safe_layer(b) > _safe_layer(a))
    print(f'type-only imports: {len(typed)}, upward: {len(upward)}', *upward, sep='\n  ')
    loops = sorted(f'{a} -> {b}' for a, b in type_only_loops(graph))
    print('type-only loops (TYPE_ONLY_LOOPS gives why):', *loops, sep='\n  ')
    return 1 if cycle or violations or unplaced else 0


def _safe_layer(module: str) -> int:
    try:
        return layer_of(module)
    except KeyError:
        return len(LAYERS)


if __name__ == '__main__':
    sys.exit(main())
