"""The gRPC verification service: wires the verifier (worker processes) to the replay store.

    sgs-verify serve                      # embedded SQLite, see docs/service.md
    from service.server import BackgroundServer, ServiceConfig
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.config import Limits, ServiceConfig
    from service.server import BackgroundServer, VerificationServer, serve

__all__ = ["BackgroundServer", "Limits", "ServiceConfig", "VerificationServer", "serve"]

# Imported when first asked for: a process that needs only a part of the package (a regression run's worker:
# service.regress) is not made to import the server, gRPC and the migrations (about 0.6 s of CPU a process).
_LAZY = {"Limits": "service.config", "ServiceConfig": "service.config", "BackgroundServer": "service.server",
         "VerificationServer": "service.server", "serve": "service.server"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'service' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
