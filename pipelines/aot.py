"""Ahead-of-time builds of numba kernels, and which build a process calls.

numba's JIT costs every new process about a second before its first kernel runs, even with
its on-disk cache: importing numba, and building its CPU target (which imports scipy.linalg to
probe BLAS). ``make`` therefore also compiles the kernels of the short ``kaudit`` steps ahead
of time (``numba.pycc``, one signature per kernel) into an extension module in the venv,
stamped with a hash of the kernel sources. :meth:`Kernels.load` returns that module when it is
installed and built from the current sources, else the JIT module (identical results, slower
start). Importing the extension module takes about a millisecond and does not import numba.

Users: :mod:`pipelines.zookeeper.native` (``kaudit_zk_kernels``) and
:mod:`pipelines.kafka.native` (``kaudit_kafka_kernels``). ``numba.pycc`` is deprecated and kept
while it builds: should a numba release drop it, ``make`` says so and the JIT (``cache=True``)
serves the same kernels. The code is generated for the build machine's CPU (``make`` builds it
where it runs).
"""

from __future__ import annotations

import hashlib
import importlib
import sys
import sysconfig
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType


@dataclass
class Kernels:
    """One set of kernels: the JIT module ``jit``, its AOT build ``aot_name`` exporting
    ``exports``, and the files of ``here`` whose contents the build's stamp hashes."""

    aot_name: str
    jit: str
    here: Path
    sources: tuple[str, ...]
    exports: tuple[str, ...]
    _impl: ModuleType | None = field(default=None, repr=False)

    def source_hash(self) -> str:
        h = hashlib.sha256()
        for name in self.sources:
            h.update(name.encode() + b"\0" + (self.here / name).read_bytes())
        return h.hexdigest()

    def stamp_path(self, module_file: str | Path) -> Path:
        return Path(module_file).with_name(self.aot_name + ".sha256")

    def aot_module(self, digest: str | None = None) -> ModuleType | None:
        """The ahead-of-time build, if installed and built from the sources of ``digest``
        (default: the current ones)."""
        try:
            mod = importlib.import_module(self.aot_name)
        except ImportError:
            return None
        try:
            current = self.stamp_path(mod.__file__).read_text().strip() == (digest or self.source_hash())
        except OSError:
            return None
        return mod if current and all(hasattr(mod, name) for name in self.exports) else None

    def load(self) -> ModuleType:
        """The AOT build when current, else the JIT module (once per process)."""
        if self._impl is None:
            self._impl = self.aot_module() or importlib.import_module(self.jit)
        return self._impl

    def is_aot(self) -> bool:
        """Does this process call the ahead-of-time build?"""
        return self.load().__name__ == self.aot_name

    def build(self, out_dir: Path, signatures: dict) -> Path:
        """Compile the exports of the JIT module with ``signatures`` into ``out_dir``."""
        from numba.pycc import CC

        kernels = importlib.import_module(self.jit)
        out_dir.mkdir(parents=True, exist_ok=True)
        digest = self.source_hash()
        _release_gil()
        cc = CC(self.aot_name)
        cc.output_dir = str(out_dir)
        cc.verbose = False
        cc.target_cpu = _host_cpu()
        for name in self.exports:
            cc.export(name, signatures[name])(getattr(kernels, name).py_func)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba.pycc announces its own deprecation
            cc.compile()
        built = out_dir / (self.aot_name + sysconfig.get_config_var("EXT_SUFFIX"))
        self.stamp_path(built).write_text(digest + "\n")
        return built

    def main(self, signatures: Callable[[], dict], argv: list[str] | None = None) -> None:
        """``python -m <the kernels' aot module> [DIR]`` (default: the venv's site-packages)."""
        argv = sys.argv[1:] if argv is None else argv
        out_dir = Path(argv[0]) if argv else Path(sysconfig.get_paths()["platlib"])
        try:
            built = self.build(out_dir, signatures())
        except Exception as err:  # noqa: BLE001 - no C compiler, no Python headers, ...: the JIT still works
            print(f"{self.aot_name} not built ({type(err).__name__}: {err}); numba's JIT will be used")
            return
        print(f"built {built}")


def _release_gil() -> None:
    """Make ``numba.pycc`` build wrappers that release the GIL around each kernel (as
    ``@njit(nogil=True)`` does for the JIT): it compiles every export with a plain
    ``Flags()``, and takes no option for it. The kernels touch no Python object, so two
    threads run them on two cores."""
    from numba.core.compiler import Flags
    from numba.pycc import compiler

    class NoGil(Flags):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = NoGil


def _host_cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()
