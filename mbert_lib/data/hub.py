"""The `datasets` hub as a data source, with a clear error when it is unreachable.

`loader` defaults to `datasets.load_dataset`; tests (and users with their
own mirror) pass any callable `loader(path, name, split=...)` returning an
iterable of row dicts.
"""

from __future__ import annotations

from collections.abc import Callable

from mbert_lib.data.errors import DataError

OFFLINE_CORPUS = "or use the builtin corpus (--source builtin)"
OFFLINE_TASK = (
    "or fine-tune on the offline stand-in task instead (--task builtin_shuffled; it is not GLUE)"
)


def load_hub_split(
    path: str, name: str, split: str, loader: Callable | None = None, offline: str = OFFLINE_CORPUS
):
    """Rows of `split` of the hub data set `path` (config `name`).

    Any failure (no network, unknown name) becomes a DataError that says how
    to work offline: a local copy, or `offline` (what else works for this caller).
    """
    if loader is None:
        import datasets  # on use: heavy (pyarrow), and only the hub source reads it

        loader = datasets.load_dataset
    try:
        return loader(path, name, split=split)
    except Exception as e:  # noqa: BLE001 - whatever the hub raises, the advice is the same
        raise DataError(
            f"could not load {path} ({name}, split {split}) from the Hugging Face hub: "
            f"{type(e).__name__}: {e}. Without a network, point --data-dir (or the "
            f"MBERT_DATA_DIR environment variable) at a local copy in the original layout, "
            f"{offline}"
        ) from e
