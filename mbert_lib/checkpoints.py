"""Model directories: the one on-disk format of every trained, converted or fine-tuned model.

    DIR/bert_config.json                 the MobileBertConfig (released field names)
    DIR/model.ckpt.{index,data-*}        tf.train.Checkpoint(model=<Keras model>), weights only
    DIR/vocab.txt, tokenizer_config.json the tokenizer, when the producer had one
    DIR/*.json, *.yaml                   provenance (training_done.json, conversion.json, ...)

`model` is a MobileBertEncoder, a Pretrainer or a Classifier of this
library. Loading also accepts a training checkpoint (a prefix or a
directory of `ckpt-N` files: roots beside `model`, such as the optimizer,
are ignored) and tf-models' pretrainer layout, whose roots are `encoder`,
`masked_lm` and `next_sentence` (`convert tf1` without --use_model_prefix).

Before anything is restored, the variables the config implies are compared
with the checkpoint's: a mismatch raises CheckpointMismatchError listing
every missing, unexpected and mis-shaped variable, never a half-loaded model.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Callable, Mapping

import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.config import MobileBertConfig
from mbert_lib.models import build_classifier, build_encoder, build_pretrainer

CONFIG_FILE = "bert_config.json"
WEIGHTS_PREFIX = "model.ckpt"
KINDS = ("encoder", "pretrainer", "classifier")
_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
_PRETRAINER_ROOTS = ("encoder", "masked_lm", "next_sentence")


def _shape(s) -> list[int]:
    return [int(x) for x in s]


class CheckpointMismatchError(ValueError):
    """A checkpoint's variables do not match the config; lists every problem."""

    def __init__(
        self,
        source: str,
        missing: Mapping[str, tuple],
        unexpected: Mapping[str, tuple],
        misshaped: Mapping[str, tuple[tuple, tuple]],
        note: str = "",
    ):
        self.source = source
        self.missing = dict(missing)
        self.unexpected = dict(unexpected)
        self.misshaped = dict(misshaped)
        n = len(self.missing) + len(self.unexpected) + len(self.misshaped)
        lines = [
            f"{source}: {n} variable(s) do not match the config" + (f"; {note}" if note else "")
        ]
        if self.missing:
            lines.append(f"  missing ({len(self.missing)}):")
            lines += [
                f"    {k}  expected shape {_shape(s)}" for k, s in sorted(self.missing.items())
            ]
        if self.unexpected:
            lines.append(f"  unexpected ({len(self.unexpected)}):")
            lines += [f"    {k}  shape {_shape(s)}" for k, s in sorted(self.unexpected.items())]
        if self.misshaped:
            lines.append(f"  wrong shape ({len(self.misshaped)}):")
            lines += [
                f"    {k}  found {_shape(f)}, expected {_shape(e)}"
                for k, (f, e) in sorted(self.misshaped.items())
            ]
        if self.misshaped and not (self.missing or self.unexpected):
            lines.append("  (only shapes differ: does the config describe this checkpoint?)")
        elif any(
            k.replace("FakeLayerNorm", "LayerNorm") in self.unexpected
            or k.replace("/LayerNorm", "/FakeLayerNorm") in self.unexpected
            for k in self.missing
        ):
            lines.append("  (FakeLayerNorm vs LayerNorm names: check normalization_type)")
        super().__init__("\n".join(lines))


# ---------------------------------------------------------------------- saving
def write_model_files(
    model,
    directory: str | os.PathLike,
    *,
    save_tokenizer: Callable[[str], None] | None = None,
    root: Mapping[str, object] | None = None,
) -> str:
    """Writes bert_config.json, the weights and the tokenizer into `directory`.

    For a directory that holds more (a training run's model_dir); each file
    is written to a temporary name and renamed. `root` replaces the default
    checkpoint root {"model": model}. Returns the weights prefix.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    checkpoint = tf.train.Checkpoint(**(root if root is not None else {"model": model}))
    prefix = checkpoint.write(os.path.join(directory, WEIGHTS_PREFIX))
    if save_tokenizer is not None:
        save_tokenizer(directory)
    model.config.to_json_file(os.path.join(directory, CONFIG_FILE))
    return prefix


def save_model_dir(
    model,
    directory: str | os.PathLike,
    *,
    save_tokenizer: Callable[[str], None] | None = None,
    extra_files: Mapping[str, str] | None = None,
    overwrite: bool = False,
    root: Mapping[str, object] | None = None,
) -> str:
    """Writes a whole model directory atomically: complete, or not there at all.

    An existing `directory` raises FileExistsError unless `overwrite`.
    `extra_files` maps file names to text (provenance). Returns the weights prefix.
    """
    with atomic.atomic_directory(directory, overwrite=overwrite) as tmp:
        write_model_files(model, tmp, save_tokenizer=save_tokenizer, root=root)
        for name, text in (extra_files or {}).items():
            atomic.write_text(os.path.join(tmp, name), text)
    return os.path.join(os.fspath(directory), WEIGHTS_PREFIX)


# --------------------------------------------------------------------- reading
# What TensorFlow raises for truncated or garbled checkpoint files: "Read less bytes than
# requested" (IndexError), "not an sstable" / "Unable to read file" (OpError).
DAMAGED = (IndexError, tf.errors.OpError)


class DamagedCheckpointError(ValueError):
    """A checkpoint's files are truncated or corrupt."""

    def __init__(self, prefix: str, error: BaseException):
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        super().__init__(
            f"{prefix}: the checkpoint's files are damaged or incomplete "
            f"({detail[:200]}); copy or export it again"
        )


def read_checkpoint(
    checkpoint: tf.train.Checkpoint, prefix: str, *, partial: bool = False, restore: bool = False
) -> None:
    """Reads checkpoint `prefix` into `checkpoint`'s objects: every checkpoint read goes here.

    Every object of `checkpoint` that holds variables must be in the file: a
    checkpoint of another model raises a ValueError naming `prefix` (before
    this, a mismatch would restore what matched and leave the rest as built).
    `partial`: values in the file that `checkpoint` has no object for are fine
    (an optimizer beside the model). `restore`: also the save counter
    (CheckpointManager's numbering). Truncated or corrupt files raise
    DamagedCheckpointError naming `prefix`.
    """
    try:
        status = (checkpoint.restore if restore else checkpoint.read)(prefix)
        status.assert_existing_objects_matched()
    except AssertionError as e:
        raise ValueError(
            f"{prefix} does not match the model or optimizer it is read into "
            f"(a checkpoint of another architecture?): {e}"
        ) from None
    except DAMAGED as e:
        raise DamagedCheckpointError(prefix, e) from None
    if partial:
        status.expect_partial()


def resolve_checkpoint(path: str | os.PathLike) -> str:
    """The weights prefix of a model directory, a training directory or a prefix."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, WEIGHTS_PREFIX + ".index")):
            return os.path.join(path, WEIGHTS_PREFIX)
        latest = tf.train.latest_checkpoint(path)
        if latest is not None:
            return latest
        found = sorted(f[: -len(".index")] for f in os.listdir(path) if f.endswith(".index"))
        if len(found) != 1:
            raise FileNotFoundError(
                f"{path}: expected {WEIGHTS_PREFIX}.index, a 'checkpoint' state file or exactly "
                f"one *.index file; found {len(found)} checkpoint(s)"
            )
        return os.path.join(path, found[0])
    if not os.path.exists(path + ".index"):
        raise FileNotFoundError(
            f"{path}: neither a directory nor a checkpoint prefix ({path}.index does not exist)"
        )
    return path


def load_config(
    path: str | os.PathLike, config: MobileBertConfig | None = None
) -> MobileBertConfig:
    """The config beside checkpoint `path`, checked against `config` when both exist.

    The two may differ in classifier_pooling (which reads the weights differently but
    needs no other ones): a classifier fine-tuned with mean pooling on a [CLS] encoder.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        resolve_checkpoint(path)  # a path that is no checkpoint is named as such
    directory = path if os.path.isdir(path) else os.path.dirname(path)
    config_file = os.path.join(directory, CONFIG_FILE)
    stored = MobileBertConfig.from_json_file(config_file) if os.path.exists(config_file) else None
    if config is None and stored is None:
        raise FileNotFoundError(f"{config_file} does not exist; pass the config explicitly")
    if (
        config is not None
        and stored is not None
        and config.replace(classifier_pooling=stored.classifier_pooling) != stored
    ):
        theirs = dataclasses.asdict(stored)
        diff = sorted(
            (k, v, theirs[k]) for k, v in dataclasses.asdict(config).items() if theirs[k] != v
        )
        raise ValueError(
            f"the given config differs from {config_file}: "
            + ", ".join(f"{k}={a!r} vs {b!r}" for k, a, b in diff)
        )
    return config if config is not None else stored


def checkpoint_shapes(prefix: str) -> dict[str, tuple[int, ...]]:
    """{variable path ('model/encoder/blocks/0/...'): shape}, without optimizer slots."""
    try:
        shapes = tf.compat.v1.train.NewCheckpointReader(prefix).get_variable_to_shape_map()
    except DAMAGED as e:
        raise DamagedCheckpointError(prefix, e) from None
    return {
        key[: -len(_SUFFIX)]: tuple(shape)
        for key, shape in shapes.items()
        if key.endswith(_SUFFIX) and ".OPTIMIZER_SLOT" not in key
    }


def checkpoint_kind(shapes: Mapping[str, tuple]) -> tuple[str | None, str]:
    """(kind, root) of a checkpoint: kind in KINDS (None if no model), root "model/" or ""."""
    root = "model/" if any(k.startswith("model/") for k in shapes) else ""
    keys = [k[len(root) :] for k in shapes if k.startswith(root)]
    if any(k.startswith("head/") for k in keys):
        return "classifier", root
    if any(k.startswith(("masked_lm/", "next_sentence/")) for k in keys):
        return "pretrainer", root
    if any(k.startswith(("embedding/", "blocks/")) for k in keys):
        return "encoder", root
    return None, root


def stored_kind(path: str | os.PathLike) -> str | None:
    """The kind (KINDS) of the model a directory or checkpoint holds, None if no model."""
    return checkpoint_kind(checkpoint_shapes(resolve_checkpoint(path)))[0]


EXPECTED = {
    "encoder": "an encoder",
    "pretrainer": "a pretrainer (encoder + MLM and NSP heads)",
    "classifier": "a fine-tuned classifier",
}


def expect_kind(path: str | os.PathLike, kinds: tuple[str, ...], command: str) -> str:
    """The kind of the model at `path`; ValueError naming the path unless it is in `kinds`."""
    kind = stored_kind(path)
    if kind not in kinds:
        held = f"an {kind}" if kind else "no model"
        raise ValueError(
            f"{os.fspath(path)} holds {held}; {command} expects "
            + " or ".join(EXPECTED[k] for k in kinds)
        )
    return kind


def _probe_shapes(root: tf.train.Checkpoint) -> dict[str, tuple[int, ...]]:
    """The variable paths and shapes `root` would write (an in-memory checkpoint)."""
    directory = f"ram://mbert_probe_{uuid.uuid4().hex}"
    try:
        return checkpoint_shapes(root.write(f"{directory}/ckpt"))
    finally:
        tf.io.gfile.rmtree(directory)


def _restore_root(net, kind: str, stored_kind: str, root: str):
    """A tf.train.Checkpoint mapping `net` onto the stored layout, and the scope it reads."""
    if kind == stored_kind:
        if root:
            return tf.train.Checkpoint(model=net), root
        return tf.train.Checkpoint(**{n: getattr(net, n) for n in _PRETRAINER_ROOTS}), ""
    # An encoder inside a pretrainer or classifier.
    if root:
        return tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=net)), root + "encoder/"
    return tf.train.Checkpoint(encoder=net), "encoder/"


def load_model(
    path: str | os.PathLike, kind: str = "pretrainer", config: MobileBertConfig | None = None
):
    """Builds the model of `kind` the config describes and restores it from `path`.

    kind: "encoder" (from any checkpoint holding an encoder), "pretrainer",
    or "classifier" (its number of classes is read from the checkpoint).
    The config is the directory's bert_config.json unless given.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    prefix = resolve_checkpoint(path)
    config = load_config(path, config)
    found = checkpoint_shapes(prefix)
    stored_kind, root = checkpoint_kind(found)
    if stored_kind is None:
        raise CheckpointMismatchError(
            prefix,
            {},
            {},
            {},
            "it holds no mbert_lib model (write models as "
            f"tf.train.Checkpoint(model=model)); first variables: {sorted(found)[:3]}",
        )
    if kind != "encoder" and stored_kind != kind:
        raise CheckpointMismatchError(prefix, {}, {}, {}, f"it holds a {stored_kind}, not a {kind}")
    if kind == "classifier":
        net = build_classifier(config, num_classes=found[root + "head/dense/kernel"][1])
    else:
        net = build_pretrainer(config) if kind == "pretrainer" else build_encoder(config)
    checkpoint, scope = _restore_root(net, kind, stored_kind, root)
    expected = _probe_shapes(checkpoint)
    present = {k: v for k, v in found.items() if k.startswith(scope)}
    missing = {k: v for k, v in expected.items() if k not in present}
    unexpected = {k: v for k, v in present.items() if k not in expected}
    misshaped = {
        k: (present[k], v)
        for k, v in expected.items()
        if k in present and tuple(present[k]) != tuple(v)
    }
    if missing or unexpected or misshaped:
        raise CheckpointMismatchError(
            prefix,
            missing,
            unexpected,
            misshaped,
            "is this a checkpoint of this config (bert_config.json)?",
        )
    read_checkpoint(checkpoint, prefix, partial=True)
    return net


def load_encoder(path, config: MobileBertConfig | None = None):
    """The MobileBertEncoder of any model directory or checkpoint."""
    return load_model(path, "encoder", config)


def load_pretrainer(path, config: MobileBertConfig | None = None):
    """The Pretrainer (encoder + MLM + NSP heads) of a model directory or checkpoint."""
    return load_model(path, "pretrainer", config)


def load_classifier(path, config: MobileBertConfig | None = None):
    """The Classifier (encoder + classification head) of a model directory or checkpoint."""
    return load_model(path, "classifier", config)
