"""Everything else is in setup.cfg; this file only adds what setup.cfg cannot say.

The Lua scripts live at the repository root in lua/ and ship inside the wheel as rqfast/lua/*.lua,
where the script loader looks first (it falls back to <repo root>/lua in a source checkout or an
editable install). setup.cfg's `packages = find:` cannot be combined with an extra package, so the
package list is built here: every package under rqfast/ plus `rqfast.lua` mapped to lua/.
"""

from setuptools import find_packages, setup

# --- the RQFAST_AS_RQ switch (docs/switching.md): rqfast-as-rq.pth at the root of site-packages, in
# the wheel (build_py copies it beside the packages) and in an editable install (setuptools builds
# that wheel without build_py's output: the editable strategy adds the file). The .pth line imports
# the top-level module _rqfast_as_rq only when RQFAST_AS_RQ is set.
from setuptools.command.build_py import build_py

PTH = 'rqfast-as-rq.pth'


class build_py_with_pth(build_py):
    def run(self) -> None:
        super().run()
        if not getattr(self, 'editable_mode', False):
            self.copy_file(PTH, f'{self.build_lib}/{PTH}', preserve_mode=False)

    def get_outputs(self, include_bytecode: bool = True) -> list:
        return [*super().get_outputs(include_bytecode), f'{self.build_lib}/{PTH}']


cmdclass = {'build_py': build_py_with_pth}
try:
    from setuptools.command.editable_wheel import editable_wheel
except ImportError:  # setuptools < 64: no PEP 660 editable installs
    pass
else:

    class _StrategyWithPth:
        def __init__(self, strategy):
            self.strategy = strategy

        def __call__(self, wheel, files, mapping):
            self.strategy(wheel, files, mapping)
            with open(PTH, 'rb') as pth:
                wheel.writestr(PTH, pth.read())

        def __enter__(self):
            self.strategy.__enter__()
            return self

        def __exit__(self, *exc_info):
            return self.strategy.__exit__(*exc_info)

    class editable_wheel_with_pth(editable_wheel):
        def _select_strategy(self, *args, **kwargs):
            return _StrategyWithPth(super()._select_strategy(*args, **kwargs))

    cmdclass['editable_wheel'] = editable_wheel_with_pth
# --- end of the RQFAST_AS_RQ switch

setup(
    packages=[*find_packages(include=['rqfast', 'rqfast.*']), 'rqfast.lua'],
    package_dir={'rqfast.lua': 'lua'},
    py_modules=['_rqfast_as_rq'],
    cmdclass=cmdclass,
)
