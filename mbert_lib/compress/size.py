"""The compressed size of an exported model: what pruning's zeros buy on disk.

A pruned kernel keeps its shape, so the .tflite file is as large as before; its zeros only
pay off once the file is compressed. Like tfmot's guide, the size reported is that of the
file after a standard compressor (gzip, level 9).
"""

from __future__ import annotations

import gzip
import os


def gzip_bytes(path: str | os.PathLike) -> int:
    """Bytes of `path` compressed by gzip at level 9."""
    with open(path, "rb") as f:
        return len(gzip.compress(f.read(), compresslevel=9, mtime=0))
