"""Builds the replay's compiled event loop (codesign/sim/_kernel.c); everything else is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the replay runs its Python
loop, which answers bit for bit the same, only slower. -ffp-contract=off keeps the compiler from fusing a
multiply and an add into one rounding, which would move the last bits of the replay's times.
"""
import sys

from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]
setup(ext_modules=[Extension("codesign.sim._kernel", ["codesign/sim/_kernel.c"], optional=True,
                             extra_compile_args=flags)])
