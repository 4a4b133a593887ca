"""Where local data lives: an explicit directory, else $MBERT_DATA_DIR, else none.

The pre-training corpus (`data.corpus`) and the GLUE readers (`data.glue`) both
look here, so neither has to import the other for it.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "MBERT_DATA_DIR"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path | None:
    """`data_dir` if given, else $MBERT_DATA_DIR if set, else None."""
    if data_dir is not None:
        return Path(data_dir)
    env = os.environ.get(DATA_DIR_ENV)
    return Path(env) if env else None
