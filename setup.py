"""Everything else is in setup.cfg; this file only adds what setup.cfg cannot say.

The Lua scripts live at the repository root in lua/ and ship inside the wheel as rqfast/lua/*.lua,
where the script loader looks first (it falls back to <repo root>/lua in a source checkout or an
editable install). setup.cfg's `packages = find:` cannot be combined with an extra package, so the
package list is built here: every package under rqfast/ plus `rqfast.lua` mapped to lua/.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=['rqfast', 'rqfast.*']), 'rqfast.lua'],
    package_dir={'rqfast.lua': 'lua'},
)
