"""Importing openenv without its web interface.

`openenv.core`'s package imports its Gradio web interface (openenv 0.10), which
neither mtrl's client nor its server uses: under load it is most of the 30 s a server
took to start. openenv skips that interface when Gradio is not importable, so while
openenv's modules load, Gradio is made unimportable (and importable again after, for
anyone else in the process). A process that already imported Gradio keeps it.
"""

from __future__ import annotations

import importlib
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()


def import_openenv(module: str) -> ModuleType:
    """`importlib.import_module(module)` (an openenv module) with Gradio kept out
    (module doc)."""
    with _LOCK:
        if "openenv.core.env_server" in sys.modules or "gradio" in sys.modules:
            return importlib.import_module(module)
        sys.modules["gradio"] = None  # import gradio -> ModuleNotFoundError
        try:
            return importlib.import_module(module)
        finally:
            if sys.modules.get("gradio", 0) is None:
                del sys.modules["gradio"]
