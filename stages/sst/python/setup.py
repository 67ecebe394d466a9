"""setup.py: the sstpipe Python module for pip, into any environment (a venv).

    python3 -m venv --system-site-packages ENV
    PKG_CONFIG_PATH=PREFIX/lib/.../pkgconfig ENV/bin/pip install --no-build-isolation \
        --no-index ./stages/sst/python

It builds the same extension as CMake (sstpipe_py.c) against an installed
libsstpipe, found as a C program finds it, with pkg-config (PKG_CONFIG_PATH
for a prefix pkg-config does not search), and records the library's
directory in the module (an rpath), so it loads without ldconfig or
LD_LIBRARY_PATH. The header is the source tree's, where this file lies,
the library the one installed from it. Offline and with Debian's setuptools
and wheel (hence --system-site-packages and --no-build-isolation): nothing
is downloaded. __version__ is the library's version, as in the CMake build.
"""

import os
import shlex
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "sstpipe"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("sstpipe: libsstpipe not found by pkg-config (install it with "
                         "`cmake --install`, and point PKG_CONFIG_PATH at the prefix's "
                         f"lib/pkgconfig): {getattr(e, 'stderr', '') or e}")
    return out.strip()


version = pkg_config("--modversion")
libdir = os.path.normpath(pkg_config("--variable=libdir"))
setup(
    name="sstpipe",
    version=version,
    description="read sstpipe SSTables and table sets (libsstpipe)",
    ext_modules=[Extension(
        "sstpipe",
        sources=[os.path.relpath(os.path.join(HERE, "sstpipe_py.c"))],
        include_dirs=[SOURCE],
        define_macros=[("SSTPIPE_PY_VERSION", f'"{version}"')],
        extra_compile_args=shlex.split(pkg_config("--cflags")),
        extra_link_args=shlex.split(pkg_config("--libs")),
        runtime_library_dirs=[libdir],
    )],
)
