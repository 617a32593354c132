"""The README stays a short front page whose links work; the docs site's pages are all in its nav.

`mkdocs build --strict` (.ci/run) checks the links and anchors inside docs/; GitHub renders the
README's links, which mkdocs does not see, so they are checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
README = REPOSITORY / 'README.md'
README_TEST_CMD = "python -m pip install -e '.[test]' && python -m pytest"  # .ci/run greps for it


def test_the_readme_is_short_and_keeps_the_set_up_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    assert README_TEST_CMD in text
    assert 'python -m pip install . && python examples/quickstart.py' in text


def test_the_readme_starts_with_the_quickstart_and_says_how_long_the_tests_take() -> None:
    lines = README.read_text().splitlines()
    assert '## Quickstart' in lines[:30], 'the Quickstart must be on the first screen'
    text = '\n'.join(lines)
    assert 'python -m pytest --subset quick' in text  # a first try, named
    assert re.search(r'A first try, about \d+ (s|min)', text) and re.search(r'Everything, about \d+ min', text)
    assert 'docs/compatibility.md' in text


def test_every_relative_link_of_the_readme_exists() -> None:
    targets = re.findall(r'\]\(([^)\s]+)\)', README.read_text())
    relative = [t for t in targets if not re.match(r'[a-z]+://', t) and not t.startswith('#')]
    assert relative, 'the README links no docs page'
    missing = [t for t in relative if not (REPOSITORY / t.split('#')[0]).exists()]
    assert not missing, missing
    assert 'docs/operations.md' in relative and 'docs/switching.md' in relative


def test_every_docs_page_is_in_the_site_nav() -> None:
    nav = (REPOSITORY / 'mkdocs.yml').read_text()
    pages = sorted(p.relative_to(REPOSITORY / 'docs').as_posix() for p in (REPOSITORY / 'docs').rglob('*.md'))
    assert pages
    missing = [page for page in pages if f': {page}\n' not in nav]
    assert not missing, f'docs pages not in mkdocs.yml nav: {missing}'
