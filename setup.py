"""Builds the replay's compiled event loop (codesign/sim/_kernel.c); everything else is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the replay runs its Python
loop, which answers bit for bit the same, only slower. -ffp-contract=off keeps the compiler from fusing a
multiply and an add into one rounding, which would move the last bits of the replay's times.
"""
import platform
import sys

from setuptools import Extension, setup

if sys.platform == "win32":
    flags = ["/O2", "/fp:precise"]  # MSVC 2022 contracts nothing at /fp:precise unless /fp:contract is given
else:
    flags = ["-O2", "-ffp-contract=off", "-fno-fast-math"]
    if platform.machine().lower() in ("i386", "i486", "i586", "i686", "x86"):
        flags += ["-msse2", "-mfpmath=sse"]  # x87's 80-bit intermediates would round differently from Python
setup(ext_modules=[Extension("codesign.sim._kernel", ["codesign/sim/_kernel.c"], optional=True,
                             extra_compile_args=flags)])
