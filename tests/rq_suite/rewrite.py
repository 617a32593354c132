"""Rewrites RQ's test suite to test rqfast: `rq` imports, `rq.` references and dotted paths in strings.

Works on tokens (the standard library's tokenize), so each kind of text gets its own rule:

- code: every name token `rq` becomes `rqfast` (`from rq.job import Job`, `import rq`, `rq.worker.Worker`);
  names that merely start with rq (`rqworker`, `rq_job`) are other tokens and stay;
- strings (docstrings and f-strings included): `import rq` (`python -c 'import rq'`) and a dotted path
  rooted at `rq` (`'rq.worker.Worker'`,
  `patch('rq.worker.logger.info')`, `'-S rq.serializers.JSONSerializer'`) becomes `rqfast.`; Redis keys
  (`'rq:queue:default'`), file names (`'rq.pid'`, `/tmp/rq-tests.txt`) and command names (`'rqworker'`)
  stay, as RQ's Redis layout is rqfast's too;
- comments stay as they are.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass, field

OLD = 'rq'
NEW = 'rqfast'

# `rq` then one or more `.identifier`, not inside a longer word, path, URL or key (`x.rq.y`, `/rq.x`, `a-rq.b`).
_DOTTED_PATH = re.compile(r'(?<![\w.\-/:@])rq((?:\.[A-Za-z_]\w*)+)(?![\w\-/@])')
# `import rq` as a whole statement in a string (`python -c 'import rq'`): the package itself.
_IMPORT_PACKAGE = re.compile(r'(?<![\w.])import rq(?![\w.\-/:@])')
# `rq.<suffix>` with one of these single components is a file name, not a module path.
_FILE_SUFFIXES = frozenset(
    {'cfg', 'conf', 'csv', 'ini', 'json', 'lock', 'log', 'out', 'pid', 'py', 'sock', 'toml', 'txt', 'yaml', 'yml'}
)
_STRING_TOKENS = frozenset(
    {tokenize.STRING} | {getattr(tokenize, name) for name in ('FSTRING_MIDDLE',) if hasattr(tokenize, name)}
)


@dataclass
class RewriteStats:
    """What one rewrite changed (and what it deliberately left alone)."""

    import_names: int = 0  # `rq` name tokens on `import` / `from` lines
    code_names: int = 0  # other `rq` name tokens: `rq.worker.Worker`, `mock.patch.object(rq.job, ...)`
    strings: Counter[tuple[str, str]] = field(default_factory=Counter)  # (old, new) dotted paths in strings
    kept_strings: Counter[str] = field(default_factory=Counter)  # `rq.<x>` in strings that are not module paths
    redis_keys: int = 0  # strings holding an `rq:` Redis key (left alone)

    def merge(self, other: RewriteStats) -> None:
        self.import_names += other.import_names
        self.code_names += other.code_names
        self.strings.update(other.strings)
        self.kept_strings.update(other.kept_strings)
        self.redis_keys += other.redis_keys

    @property
    def changes(self) -> int:
        return self.import_names + self.code_names + sum(self.strings.values())


def rewrite_string_text(text: str, stats: RewriteStats | None = None) -> str:
    """Rewrites the dotted paths rooted at `rq` in the text of one string literal (quotes included)."""

    def replace(match: re.Match[str]) -> str:
        old = match.group(0)
        tail = match.group(1)
        if tail.count('.') == 1 and tail[1:].lower() in _FILE_SUFFIXES:
            if stats is not None:
                stats.kept_strings[old] += 1
            return old
        new = NEW + tail
        if stats is not None:
            stats.strings[(old, new)] += 1
        return new

    if stats is not None and 'rq:' in text:
        stats.redis_keys += 1

    def replace_import(match: re.Match[str]) -> str:
        if stats is not None:
            stats.strings[('import rq', 'import rqfast')] += 1
        return f'import {NEW}'

    return _IMPORT_PACKAGE.sub(replace_import, _DOTTED_PATH.sub(replace, text))


def rewrite_source(source: str, stats: RewriteStats | None = None) -> str:
    """Returns the source with RQ's imports, references and dotted-path strings pointing at rqfast."""
    if stats is None:
        stats = RewriteStats()
    line_starts = [0]
    for line in source.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))

    def offset(pos: tuple[int, int]) -> int:
        return line_starts[pos[0] - 1] + pos[1]

    edits: list[tuple[int, int, str]] = []
    line_is_import = False
    at_line_start = True
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            at_line_start = at_line_start or tok.type == tokenize.NEWLINE  # NL also ends lines inside brackets
            continue
        if at_line_start:  # first token of a logical line
            line_is_import = tok.type == tokenize.NAME and tok.string in ('import', 'from')
            at_line_start = False
        if tok.type == tokenize.NAME and tok.string == OLD:
            edits.append((offset(tok.start), offset(tok.end), NEW))
            if line_is_import:
                stats.import_names += 1
            else:
                stats.code_names += 1
        elif tok.type in _STRING_TOKENS and 'rq' in tok.string:
            start, end = offset(tok.start), offset(tok.end)
            text = source[start:end]  # the source text, not tok.string: f-string parts unescape `{{`
            new_text = rewrite_string_text(text, stats)
            if new_text != text:
                edits.append((start, end, new_text))
    for start, end, new in sorted(edits, reverse=True):
        source = source[:start] + new + source[end:]
    return source
