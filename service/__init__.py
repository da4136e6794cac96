"""The gRPC verification service: wires the verifier (worker processes) to the replay store.

    sgs-verify serve                      # embedded SQLite, see docs/service.md
    from service.server import BackgroundServer, ServiceConfig
"""

from service.config import Limits, ServiceConfig
from service.server import BackgroundServer, VerificationServer, serve

__all__ = ["BackgroundServer", "Limits", "ServiceConfig", "VerificationServer", "serve"]
