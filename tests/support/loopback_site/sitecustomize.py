"""Installs the tests' loopback guard (``tests/support/loopback_core.py``) in every Python process a test run
starts: the ``loopback_guard`` plugin puts this folder first on ``PYTHONPATH``. Then runs the ``sitecustomize``
this one shadows, if the interpreter has one (Debian's Python does)."""

from __future__ import annotations

import importlib.util
import os
import sys


def _install_guard() -> None:
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "loopback_core.py")
    spec = importlib.util.spec_from_file_location("loopback_core", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["loopback_core"] = module
    spec.loader.exec_module(module)
    module.install()


def _run_shadowed() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    saved = sys.path[:]
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    this = sys.modules.pop("sitecustomize", None)
    try:
        importlib.import_module("sitecustomize")
    except ModuleNotFoundError as error:
        if error.name != "sitecustomize":
            raise
    finally:
        sys.path[:] = saved
        if this is not None:
            sys.modules["sitecustomize"] = this


_install_guard()
_run_shadowed()
