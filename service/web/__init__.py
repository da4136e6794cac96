"""The annotated replay viewer: pages, static files and a JSON API over HTTP, served by
``sgs-verify serve --http HOST:PORT`` beside gRPC in the same process (docs/viewer.md).

Needs the ``web`` extra (Starlette, uvicorn, markdown-it-py): ``pip install 'sgs-verify[web]'``.
"""
