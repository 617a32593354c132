"""rqfast's import graph, read from the source: `python -m tests.import_graph` prints it.

Every import counts, including those inside function bodies; only imports under `if TYPE_CHECKING:`
are left out (they never run). LAYERS is the one table of which module may import which:
a module imports only from its own layer or the layers below it. tests/test_layers.py asserts
that the graph has no cycle and keeps to the layers.
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
        ],
    ),
    ('storage', ['jobhash', 'scriptload', 'scripts', 'workerscripts', 'intermediate_queue', 'rate_limit']),
    ('results', ['results', 'events']),
    (
        'job',
        [
            'joboptions',
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
    ('runners', ['maintenance', 'sync', 'orphaned', 'horse', 'scheduler']),
    ('registry', ['registry', 'executions']),
    ('queue', ['queuebase', 'dependents', 'jobcreation', 'queue', 'decorators']),
    ('group', ['group']),
    ('cron', ['cron_record', 'cron_enqueue', 'cron_slots', 'cron']),
    ('worker', ['worker', 'worker_pool', 'metrics']),
    ('surface', ['utils']),
    ('cli', ['cli', '__main__']),
    ('api', [PACKAGE]),
]


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
    """The index in LAYERS of a module; KeyError for a module the table does not place."""
    relative = module[len(PACKAGE) + 1 :] if module != PACKAGE else PACKAGE
    for index, (_, names) in enumerate(LAYERS):
        for entry in names:
            if relative == entry or relative.startswith(entry + '.'):
                return index
    raise KeyError(module)


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
        lines = len(paths[module].read_text().splitlines())
        size = f'{lines} lines' + (' (over 400)' if lines > 400 else '')
        print(f'{module:24s} [{label}] {size}\n    -> {", ".join(sorted(graph[module])) or "-"}')
    cycle = find_cycle(graph)
    print('\ncycle:', ' -> '.join(cycle) if cycle else 'none')
    placed = {m: {t for t in targets if t not in unplaced} for m, targets in graph.items() if m not in unplaced}
    violations = layer_violations(placed)
    print('layer violations:', '\n  ' + '\n  '.join(violations) if violations else 'none')
    if unplaced:
        print('not in LAYERS:', ', '.join(sorted(unplaced)))
    return 1 if cycle or violations or unplaced else 0


def _safe_layer(module: str) -> int:
    try:
        return layer_of(module)
    except KeyError:
        return len(LAYERS)


if __name__ == '__main__':
    sys.exit(main())
