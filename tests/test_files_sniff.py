"""The client library's format sniffer gives xz the memory the importer gives it (clients/files.py names the figure
rather than importing the importer: docs/architecture.md)."""

from __future__ import annotations

from clients import files
from importers.freekill.limits import DEFAULT_MAX_BYTES, xz_memory


def test_the_sniffers_xz_memory_is_the_importers() -> None:
    assert xz_memory(DEFAULT_MAX_BYTES) == files._XZ_SNIFF_MEMORY
