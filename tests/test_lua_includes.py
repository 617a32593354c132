"""The Lua include lines (rqfast/scriptload.py's _source): each script in lua/ names the helper files
(lua/_*.lua) it uses with `--@include <file>` lines, and is sent with them in front, each once, every
file after the ones it includes. So a script carries only what it uses, and both finish scripts call
the one finish_one of lua/_finish.lua."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from rqfast import keys
from rqfast.scriptload import INCLUDE, _lua_dir, _source

LUA = _lua_dir()
SCRIPTS = sorted(path.stem for path in LUA.glob('*.lua') if not path.name.startswith('_'))
HELPERS = sorted(path.name for path in LUA.glob('_*.lua'))


def _code(text: str) -> str:
    """`text` without its comments, each string literal left as ''."""
    pattern = r"""'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|--[^\n]*"""
    return re.sub(pattern, lambda m: '' if m.group().startswith('--') else "''", text)


def _includes(name: str) -> list[str]:
    lines = (LUA / name).read_text().splitlines()
    return [line[len(INCLUDE) :].strip() for line in lines if line.startswith(INCLUDE)]


def _defined(name: str) -> set[str]:
    """The names a file declares at its top level (`local function f`, `local a, b =`, `local a, b`)."""
    found: set[str] = set()
    pattern = r'^local (?:function (\w+)|([\w, ]+?)\s*(?:=|$))'
    for match in re.finditer(pattern, _code((LUA / name).read_text()), re.M):
        found.update(part.strip() for part in (match.group(1) or match.group(2)).split(','))
    return found


def _used(name: str, candidates: set[str]) -> set[str]:
    """The `candidates` a file refers to: not as a field (`K.dead_letter`) or a table key (`dead_letter =`)."""
    code = _code((LUA / name).read_text())
    return {n for n in candidates if re.search(rf'(?<![.\w]){n}\b(?!\s*=[^=])', code)}


def _helper_names() -> dict[str, str]:
    owner: dict[str, str] = {}
    for helper in HELPERS:
        for name in _defined(helper):
            assert name not in owner, f'{name} is declared by both {owner[name]} and {helper}'
            owner[name] = helper
    return owner


def test_every_file_includes_what_it_uses_and_nothing_else() -> None:
    """A helper a file calls is declared in a file it includes itself (a name the script does not
    declare would be a missing global when that line runs); every file it includes serves it."""
    owner = _helper_names()
    assert {'K', 'argv_reader', 'claim_next', 'finish_one', 'enqueue_jobs'} <= set(owner)
    for file in [f'{script}.lua' for script in SCRIPTS] + HELPERS:
        own = _defined(file)
        used = _used(file, set(owner)) - own
        included = _includes(file)
        provided = {name for name, helper in owner.items() if helper in included}
        assert used <= provided, f'{file} uses {sorted(used - provided)} without including their files'
        for helper in included:
            assert helper in HELPERS, f'{file} includes {helper}, which is not a helper file in lua/'
            assert _defined(helper) & used, f'{file} includes {helper} and uses none of it'
    included_anywhere = {helper for file in [f'{s}.lua' for s in SCRIPTS] + HELPERS for helper in _includes(file)}
    assert set(HELPERS) == included_anywhere, f'never included: {sorted(set(HELPERS) - included_anywhere)}'


def test_a_helper_file_declares_each_name_before_using_it() -> None:
    """Inside one file, a function that calls a helper declared further down would call a global."""
    for helper in HELPERS:
        code = _code((LUA / helper).read_text())
        for name in _defined(helper):
            declared = re.search(rf'^local (?:function )?(?:[\w, ]*\b)?{name}\b', code, re.M)
            assert declared is not None
            first_use = re.search(rf'(?<![.\w]){name}\b(?!\s*=[^=])', code[: declared.start()])
            assert first_use is None, f'{helper} uses {name} before declaring it'


def test_scripts_carry_only_their_includes() -> None:
    """finish_job and finish_jobs share lua/_finish.lua (one finish_one), sent once each; a script
    that claims nothing or enqueues nothing carries neither; no script carries another script."""
    finish = (LUA / '_finish.lua').read_text()
    for name in ('finish_job', 'finish_jobs'):
        text = _source(LUA, name)
        assert text.count(finish) == 1
        assert text.count('local function finish_one(') == 1
        assert text.count('local function claim_next(') == 1
    assert 'claim_next' not in _source(LUA, 'enqueue_jobs')
    assert 'local function enqueue_jobs(' in _source(LUA, 'enqueue_debounced')
    assert _source(LUA, 'release_lock') == (LUA / 'release_lock.lua').read_text()
    for name in SCRIPTS:
        text = _source(LUA, name)
        assert len(text) < 60_000  # (sent once per server, FUNCTION LOAD or SCRIPT LOAD: a bound, not a cost)
        for other in SCRIPTS:
            if other != name:
                assert (LUA / f'{other}.lua').read_text() not in text, f'{name} carries {other}.lua'


def test_every_script_compiles(connection: redis.Redis) -> None:
    """SCRIPT LOAD compiles a script: each one, with its includes, is valid Lua."""
    for name in SCRIPTS:
        text = _source(LUA, name)
        assert connection.script_load(text) == __import__('hashlib').sha1(text.encode()).hexdigest()


def _write(directory: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (directory / name).write_text(text)


def test_includes_come_first_once_each_in_dependency_order(tmp_path: Path, connection: redis.Redis) -> None:
    _write(
        tmp_path,
        {
            '_a.lua': '--@include _b.lua\nlocal function a() return b() .. "a" end\n',
            '_b.lua': '--@include _c.lua\nlocal function b() return c .. "b" end\n',
            '_c.lua': 'local c = ARGV[1]',  # (no final newline: one is added)
            's.lua': '-- s.lua\n--@include _c.lua\n--@include _a.lua\n--@include _b.lua\nreturn a() .. c\n',
        },
    )
    text = _source(tmp_path, 's')
    assert text == (
        'local c = ARGV[1]\n'
        '--@include _c.lua\nlocal function b() return c .. "b" end\n'
        '--@include _b.lua\nlocal function a() return b() .. "a" end\n'
        '-- s.lua\n--@include _c.lua\n--@include _a.lua\n--@include _b.lua\nreturn a() .. c\n'
    )
    assert connection.eval(text, 0, keys.PREFIX) == f'{keys.PREFIX}ba{keys.PREFIX}'.encode()
    assert _source(tmp_path, 's') == text  # the same text, so the same sha, every time


def test_an_include_cycle_or_a_missing_file_is_an_error(tmp_path: Path) -> None:
    _write(tmp_path, {'_a.lua': '--@include _b.lua\n', '_b.lua': '--@include _a.lua\n', 's.lua': '--@include _a.lua\n'})
    with pytest.raises(RuntimeError, match=r'include cycle: s.lua -> _a.lua -> _b.lua -> _a.lua'):
        _source(tmp_path, 's')
    _write(tmp_path, {'t.lua': '--@include _gone.lua\n'})
    with pytest.raises(FileNotFoundError):
        _source(tmp_path, 't')


def test_every_script_loads_as_a_function_library(connection: redis.Redis) -> None:
    """FUNCTION LOAD runs a library's top level: each script's helpers define nothing global and read no
    ARGV there (its ARGV is the call's, a local of the library)."""
    from rqfast.scriptload import script

    for name in SCRIPTS:
        library = script(name).library
        assert connection.execute_command('FUNCTION', 'LOAD', 'REPLACE', library) == script(name).function.encode()


_ONE_KEY = "-- KEYS[1]: the prefix's `queues` key (rqfast.keys.SLOT_KEY), in every call"


@pytest.mark.parametrize('name', SCRIPTS)
def test_every_header_says_the_one_key_every_call_sends(name: str) -> None:
    """scriptload sends one key, SLOT_KEY (it routes the call on a cluster); every other key is named from ARGV."""
    text = (LUA / f'{name}.lua').read_text()
    header = text[: text.index('\n\n')] if '\n\n' in text else text
    assert _ONE_KEY in header, f'{name}.lua: its header does not say the one key every call sends'
    assert not re.search(r'KEYS\[(?!1\])', _code(text)), f'{name}.lua reads a key that no call sends'
    assert keys.SLOT_KEY.endswith('queues')
