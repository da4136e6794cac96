"""Telling a FreeKill record from one of our logs (importers.freekill ``sniff``, the one test the command line and
the importer share) inflates a compressed record's head within the importer's xz memory: a record that declares a
dictionary of gigabytes is not inflated to be looked at (it is imported as FreeKill's, where limits.py bounds it)."""

from __future__ import annotations

import lzma
import struct
import zlib

import pytest

from importers.freekill import TRANSCRIPT, sniff, unambiguous

TRANSCRIPT_HEAD = b'{"seq": 0, "kind": "meta", "version": "0.5.22"}\n{"seq": 1, "kind": "notify"}\n'


def with_dictionary(xz: bytes, props: int) -> bytes:
    """``xz`` (one block, LZMA2) with its block header's dictionary-size byte set to ``props`` (40: 4 GiB)."""
    header_size = (xz[12] + 1) * 4
    header = bytearray(xz[12:12 + header_size])
    at = header.index(b"\x21\x01", 2) + 2  # filter flags: LZMA2's id, one byte of properties
    header[at] = props
    header[-4:] = struct.pack("<I", zlib.crc32(header[:-4]))
    return xz[:12] + bytes(header) + xz[12 + header_size:]


def test_a_compressed_transcript_is_told_within_the_importers_xz_memory() -> None:
    xz = lzma.compress(TRANSCRIPT_HEAD, format=lzma.FORMAT_XZ, filters=[{"id": lzma.FILTER_LZMA2, "preset": 1}])
    assert sniff(xz) == TRANSCRIPT and unambiguous(xz)
    huge = with_dictionary(xz, 40)
    with pytest.raises(lzma.LZMAError, match="Memory usage limit"):  # (its header valid, declaring 4 GiB)
        lzma.LZMADecompressor(memlimit=1 << 30).decompress(huge)
    assert sniff(huge) is None  # not inflated to be looked at...
    assert unambiguous(huge)  # ...and still never taken for one of our logs
