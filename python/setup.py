"""Builds hetrt with the project's CMake and packages what its install
component `python` lays out: the extension, the core library beside it, the
plugins in hetrt-plugins/ and the pure-Python files.

HETRT_BUILD_DIR=DIR reuses an already configured build tree (only the
extension is rebuilt); otherwise build-python/ at the repository root is
configured without tests and benchmarks and built whole.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REPO = pathlib.Path(__file__).resolve().parent.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        reuse = os.environ.get("HETRT_BUILD_DIR")
        build = pathlib.Path(reuse or REPO / "build-python")
        if reuse:
            subprocess.check_call(["cmake", "--build", str(build), "--target", "hetrt_python"])
        else:
            subprocess.check_call(["cmake", "-S", str(REPO), "-B", str(build), "-G", "Ninja",
                                   "-DCMAKE_BUILD_TYPE=Release", "-DHETRT_BUILD_TESTS=OFF",
                                   "-DHETRT_BUILD_BENCH=OFF", f"-DPython3_EXECUTABLE={sys.executable}"])
            subprocess.check_call(["cmake", "--build", str(build)])
        package = pathlib.Path(self.get_ext_fullpath(ext.name)).parent
        with tempfile.TemporaryDirectory() as staging:
            subprocess.check_call(["cmake", "--install", str(build), "--component", "python", "--prefix", staging])
            shutil.copytree(pathlib.Path(staging) / "hetrt", package, dirs_exist_ok=True)


setup(packages=["hetrt"], ext_modules=[Extension("hetrt._hetrt", sources=[])], cmdclass={"build_ext": CMakeBuild})
