"""The share of rqfast's annotations that mention `Any`: `python -m tests.any_share [module ...]`.

An annotation is a parameter's, a return's or an annotated assignment's (class fields included);
it mentions Any when `Any` (or `typing.Any`) appears anywhere in it, `dict[str, Any]` as much as
`Any`. Given module names (`scripts`, `worker/base`), it also prints their own counts.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / 'rqfast'


def _mentions_any(node: ast.expr) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == 'Any':
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == 'Any':
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):  # a quoted annotation
            try:
                if _mentions_any(ast.parse(sub.value, mode='eval').body):
                    return True
            except SyntaxError:
                continue
    return False


def annotations(tree: ast.AST) -> list[ast.expr]:
    """Every annotation in a module's tree."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
            found += [arg.annotation for arg in every if arg.annotation is not None]
            if node.returns is not None:
                found.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return found


def count(path: Path) -> tuple[int, int]:
    """(annotations mentioning Any, annotations) in one file."""
    every = annotations(ast.parse(path.read_text(), str(path)))
    return sum(map(_mentions_any, every)), len(every)


def main(modules: list[str]) -> None:
    total_any = total = 0
    for path in sorted(ROOT.rglob('*.py')):
        with_any, n = count(path)
        total_any, total = total_any + with_any, total + n
    for module in modules:
        with_any, n = count(ROOT / f'{module}.py')
        print(f'{module}: {with_any}/{n} mention Any')
    print(f'rqfast: {total_any}/{total} annotations mention Any ({100 * total_any / total:.1f}%)')


if __name__ == '__main__':
    main(sys.argv[1:])
