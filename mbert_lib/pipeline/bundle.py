"""A compact bundle of a finished run's trained steps, so notebooks open without training.

    python -m mbert_lib bundle write     runs/laptop -> bundles/laptop.tar.xz (+ .sha256)
    python -m mbert_lib bundle install   bundles/laptop.tar.xz -> runs/laptop

The bundle holds the steps notebook 05 reads whole (`BUNDLE_STEPS`: the progressive student,
the no-AT ablation, the per-layer transfer summary; PKT's layer-wise stages without PD when
they have run), which every later notebook also needs. The teacher is not in it: the shipped
one (teachers/) installs in seconds. Each comes as its consumers read it: its record,
configs, vocabulary, TensorBoard logs, final weights and every stage snapshot, all float32
and bit for bit. What a finished step never reads again is left out: a trainer's resume
state (a pre-training run's `checkpoints/`, the optimizer moments in the stage checkpoints, which
are rewritten model-only).

It also holds the records of the other students and their seeds (`RECORD_STEPS`), and of the
payoff's fine-tuning steps, the optional Table 8/9 rows, their extra seeds and the
label-budget curve's larger budgets when they have run with the current settings
(`OPTIONAL_RECORD_STEPS`: more than an hour of training), without their models, which do not
fit: each step's record and its runs' experiment files, marked `records_only.json`. Such a
step counts as done for whoever reads its record; a step that must run and reads its models
trains it first (`pipeline.core`).

It is a plain archive: a tar in xz that `tar -tvJf` lists and `tar -xJf` unpacks into the
step directories of a finished run, each file as the run wrote it. Its first member,
`bundle.json`, says what it holds (steps, settings' fingerprints, the data it was made
from, every file's size and sha256); `SHA256SUMS` lets `sha256sum -c` check the unpacked
files. The one change to a file: in text files (records, configs) the run directory's
path reads `@RUN_DIR@`, which `install` replaces with the new run's.

It stays small without rounding a weight: the student snapshots share most tensors
(layers not yet trained, the embedding copied from the teacher), which one xz stream with
a dictionary larger than the whole tar stores once, and the xz settings for 4-byte data
(lp=2, pb=2: the literal coder knows which byte of a float32 it codes) compress the
nearly constant sign and exponent bytes.

The data step is not bundled (its corpus is the dataset itself, which must not be
redistributed). The bundle records the sha256 of each data file it was made from, under
its name in the project's layout (`steps.data_files`), so the same files installed from
the original releases (`wikitext-2/wiki.valid.tokens`, `SST-2/dev.tsv`) match. Where a
file differs, is missing or is extra, `install` names it, what the pipeline reads it for,
and the training the bundle would have saved. Then it runs the data step (seconds) and
checks its outputs against the bundle's, so a bundle never meets other data than it was
trained on. Steps whose fingerprint (their settings) differs from the current code's are
not installed: they would be stale.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import lzma
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import tensorflow as tf

from mbert_lib import atomic
from mbert_lib.checkpoints import read_checkpoint
from mbert_lib.data.provenance import sha256_file
from mbert_lib.distill.trainer import init_dir, read_run, stage_checkpoint, stage_dir
from mbert_lib.models import build_pretrainer
from mbert_lib.pipeline.core import (
    STALE_MARK,
    Context,
    PipelineError,
    read_record,
    run_steps,
    step_fingerprints,
)
from mbert_lib.pipeline.registry import STEPS
from mbert_lib.pipeline.steps import DATA_FILE_ROLES, data_files, data_inputs
from mbert_lib.run_lock import LOCK_FILE
from mbert_lib.runtime import REPO_ROOT, shown_path
from mbert_lib.step_records import RECORD_FILE, RECORDS_ONLY_FILE
from mbert_lib.train.run_record import EXPERIMENT_FILE

BUNDLE_STEPS = ("pkt", "ablation_pd_fmt", "transfer")
RECORD_STEPS = ("no_transfer", "teacher_gate", "ablation_copy", "mlm_seeds")
# bundled when they have run with the current settings, left out otherwise: PKT's stages
# without PD (whole), the payoff's fine-tuning steps, and the optional steps of Tables 8/9
# and the label-budget curve (records only)
OPTIONAL_BUNDLE_STEPS = ("ablation_fmt_at",)
OPTIONAL_RECORD_STEPS = (
    "label_budget",
    "task_distillation",
    "task_distillation_sweep",
    "payoff",
    "jkt",
    "akt",
    "ablation_pd",
    "distill_seeds",
    "label_budget_all",
)
RECORD_NAMES = (RECORD_FILE, EXPERIMENT_FILE)  # what a records-only step keeps, at any depth
DEFAULT_BUNDLE = REPO_ROOT / "bundles" / "laptop.tar.xz"
MAX_BYTES = 25_000_000
FORMAT = 3
MANIFEST = "bundle.json"
CHECKSUMS = "SHA256SUMS"  # `sha256sum -c SHA256SUMS` checks the unpacked files
ABOUT = (
    "Finished step directories of a MobileBERT reproduction run (python -m mbert_lib "
    "reproduce), each file as the run wrote it, except that text files read @RUN_DIR@ for "
    "the run directory. `steps` are whole, `records` hold only their records; `data` names "
    "the data files they were trained on; `files` lists every file with its sha256 "
    "(also in SHA256SUMS). Install with: python -m mbert_lib bundle install"
)
RUN_DIR_TOKEN = "@RUN_DIR@"  # the run directory in text files, replaced on install
TEXT_SUFFIXES = (".json", ".yaml", ".txt")
DATA_FILES = ("tokenizer/vocab.txt", "examples/train.tfrecord", "examples/eval.tfrecord")


class BundleError(PipelineError):
    """A bundle that cannot be written or used: damaged, stale, too large, other data."""


@dataclasses.dataclass(frozen=True)
class Installed:
    """What `install` did: the steps it put in place and those it left as they were."""

    installed: tuple[str, ...]
    already_done: tuple[str, ...]


def sidecar(bundle: str | os.PathLike) -> Path:
    """`<bundle>.sha256`: the bundle's sha256 in `sha256sum` format (`sha256sum -c` reads it)."""
    return Path(f"{os.fspath(bundle)}.sha256")


# --------------------------------------------------------------------------- write
def _with_optional(ctx: Context, prints: dict, chosen, optional_steps, optional_records, log):
    """(steps, records): the chosen ones and the optional ones that finished with the
    current settings (the others are logged as left out)."""
    steps, records = chosen

    def current(name: str) -> bool:
        record = read_record(ctx.step_dir(name))
        if record is not None and record.get("fingerprint") == prints[name]:
            return True
        log(f"bundle: {name} left out (optional; not run with the current settings)")
        return False

    steps = (*steps, *(n for n in optional_steps if n not in steps and current(n)))
    records = (
        *records,
        *(n for n in optional_records if n not in (*steps, *records) and current(n)),
    )
    return steps, records


def _check_finished(ctx: Context, prints: dict, names: Sequence[str]) -> dict:
    """The data step's record, after refusing (BundleError) a step of `names` or the data
    step that has not finished, or finished with other settings than the current code's."""
    data_record = read_record(ctx.step_dir("data"))
    if data_record is None or data_record.get("fingerprint") != prints["data"]:
        raise BundleError(
            f"{ctx.step_dir('data')}: the data step has not finished with the "
            "current settings; run the pipeline first"
        )
    for name in names:
        record = read_record(ctx.step_dir(name))
        if record is None:
            raise BundleError(
                f"step {name!r} has not finished in {ctx.out_dir}; run "
                f"`python -m mbert_lib reproduce --steps {name}` first"
            )
        if record.get("fingerprint") != prints[name]:
            raise BundleError(
                f"step {name!r} in {ctx.out_dir} ran with other settings than "
                "the current code's (its fingerprint differs); run it again first"
            )
    return data_record


def write_bundle(
    ctx: Context,
    out: str | os.PathLike = DEFAULT_BUNDLE,
    steps: Sequence[str] = BUNDLE_STEPS,
    records: Sequence[str] = RECORD_STEPS,
    optional_steps: Sequence[str] = OPTIONAL_BUNDLE_STEPS,
    optional_records: Sequence[str] = OPTIONAL_RECORD_STEPS,
    max_bytes: int = MAX_BYTES,
    log: Callable[[str], None] = print,
) -> dict:
    """Packs ctx's finished `steps` (whole) and `records` (records only), and those of
    `optional_steps` / `optional_records` that finished with the current settings (whole /
    records only), into `out` (xz tar) and
    `<out>.sha256`; returns the manifest. Refuses unfinished or stale `steps` and
    `records`, and a result over max_bytes."""
    overlap = sorted(set(steps) & set(records))
    if overlap:
        raise BundleError(f"steps {overlap} are asked for both whole and as records only")
    prints = step_fingerprints(STEPS, ctx)
    steps, records = _with_optional(
        ctx, prints, (steps, records), optional_steps, optional_records, log
    )
    data_record = _check_finished(ctx, prints, (*steps, *records))
    run_dir = str(ctx.out_dir.resolve())
    with tempfile.TemporaryDirectory(prefix="mbert_bundle_") as staging:
        staging = Path(staging)
        for name in steps:
            log(f"bundle: {name}")
            _stage_step(ctx.step_dir(name), staging / name, run_dir)
        for name in records:
            log(f"bundle: {name} (records only)")
            _stage_records(ctx.step_dir(name), staging / name, run_dir, Path(out).name)
        files = {
            path.relative_to(staging).as_posix(): _file_entry(path)
            for path in sorted(staging.rglob("*"))
            if path.is_file()
        }
        manifest = {
            "about": ABOUT,
            "format": FORMAT,
            "made": time.strftime("%Y-%m-%d %H:%M:%S"),
            "steps": {name: prints[name] for name in steps},
            "records": {name: prints[name] for name in records},
            "data": {
                "fingerprint": prints["data"],
                "source": data_record["result"]["source"],
                "inputs": data_inputs(ctx).get("files", {}),
                "sha256": {f: sha256_file(ctx.step_dir("data") / f) for f in DATA_FILES},
            },
            "seconds": {
                name: read_record(ctx.step_dir(name)).get("seconds") for name in (*steps, *records)
            },
            "files": files,
        }
        with atomic.atomic_path(out) as tmp:
            with (
                lzma.open(tmp, "wb", format=lzma.FORMAT_XZ, filters=_xz_filters(files)) as xz,
                tarfile.open(fileobj=xz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            ):
                _add_bytes(tar, MANIFEST, json.dumps(manifest, indent=1).encode())
                _add_bytes(tar, CHECKSUMS, _checksums(files).encode())
                for relative in files:
                    _add_bytes(tar, relative, (staging / relative).read_bytes())
                    _refuse_over(os.path.getsize(tmp), max_bytes, "at least ")
            size = os.path.getsize(tmp)
            _refuse_over(size, max_bytes)
            digest = sha256_file(tmp)
    atomic.write_text(sidecar(out), f"{digest}  {Path(out).name}\n")
    log(
        f"bundle: {out} ({size / 1e6:.1f} MB, sha256 {digest[:16]}...), "
        f"{len(files)} files of {', '.join(steps)}"
        + (f"; the records of {', '.join(records)}" if records else "")
    )
    return manifest


def _refuse_over(size: int, max_bytes: int, bound: str = "") -> None:
    """BundleError when `size` (what xz has written so far, or in all) is over the limit:
    a bundle too large is refused as soon as it is, not after compressing the rest."""
    if size > max_bytes:
        raise BundleError(
            f"the bundle would be {bound}{size / 1e6:.1f} MB, over the "
            f"{max_bytes / 1e6:g} MB limit; bundle fewer steps"
        )


def _xz_filters(files: dict) -> list[dict]:
    """LZMA2 (`xz -9e`) with a dictionary as large as the whole tar, so a tensor repeated in
    a later snapshot is found however far back it first appeared, and literal contexts for
    4-byte words (lc=2, lp=2, pb=2; on the command line, `xz --lzma2=preset=9e,lc=2,lp=2,pb=2`
    with `dict=` the tar's size). docs/bundle.md compares it with other settings."""
    total = sum(entry["bytes"] for entry in files.values()) + (1 << 20)
    return [
        {
            "id": lzma.FILTER_LZMA2,
            "preset": 9 | lzma.PRESET_EXTREME,
            "dict_size": min(total, 1 << 30),
            "lc": 2,
            "lp": 2,
            "pb": 2,
        }
    ]


def _checksums(files: dict) -> str:
    """`sha256sum` lines for the bundle's files, as they unpack."""
    return "".join(f"{entry['sha256']}  {name}\n" for name, entry in files.items())


def _stage_step(source: Path, target: Path, run_dir: str) -> None:
    """Copies a step directory as its consumers read it (see the module docstring)."""
    distillation = (source / "stages").is_dir()
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not path.is_file() or path.name == LOCK_FILE or _is_resume_state(relative, distillation):
            continue
        _stage_file(path, target / relative, run_dir)
    if distillation:
        _stage_snapshots(source, target)


def _stage_records(source: Path, target: Path, run_dir: str, bundle_name: str) -> None:
    """A step's record and its runs' experiment files, and the mark that says so."""
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.name in RECORD_NAMES:
            _stage_file(path, target / path.relative_to(source), run_dir)
    (target / RECORDS_ONLY_FILE).write_text(
        json.dumps(
            {
                "bundle": bundle_name,
                "kept": list(RECORD_NAMES),
                "note": "installed from the bundle without its trained models; a step that "
                "reads them trains this step first",
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )


def _stage_file(path: Path, destination: Path, run_dir: str) -> None:
    """Copies one file; text files with the run directory written as RUN_DIR_TOKEN."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in TEXT_SUFFIXES:
        text = path.read_text(encoding="utf-8").replace(run_dir, RUN_DIR_TOKEN)
        destination.write_text(text, encoding="utf-8")
    else:
        shutil.copyfile(path, destination)


def _is_resume_state(relative: Path, distillation: bool) -> bool:
    """A pre-training run's `checkpoints/`; a distillation's stage checkpoints (rewritten)."""
    parts = relative.parts
    if parts[0] == "checkpoints":
        return True
    return (
        distillation
        and parts[0] == "stages"
        and (parts[1] == "init" or (len(parts) > 2 and parts[2] == "checkpoints"))
    )


def _stage_snapshots(source: Path, target: Path) -> None:
    """Each stage's newest checkpoint (and the initial student), model weights only, in
    the layout `distill.trainer.stage_checkpoint` reads; checked tensor by tensor."""

    experiment, stages = read_run(source)
    config = experiment.student.build_config()
    for stage in [None, *stages]:
        path = stage_checkpoint(source, stage)
        if path is None:
            raise BundleError(
                f"{source}: a finished run without the checkpoint of stage "
                f"{'init' if stage is None else stage.name}"
            )
        relative = Path(
            os.path.relpath(
                init_dir(source)
                if stage is None
                else os.path.join(stage_dir(source, stage), "checkpoints"),
                source,
            )
        )
        student = build_pretrainer(config)
        read_checkpoint(
            tf.train.Checkpoint(model=student), path, partial=True
        )  # the optimizer's slots are left behind
        prefix = target / relative / os.path.basename(path)
        prefix.parent.mkdir(parents=True, exist_ok=True)
        written = tf.train.Checkpoint(model=student).write(str(prefix))
        (prefix.parent / "checkpoint").write_text(
            f'model_checkpoint_path: "{prefix.name}"\n'
            f'all_model_checkpoint_paths: "{prefix.name}"\n',
            encoding="utf-8",
        )
        _check_same_weights(path, written)


def _check_same_weights(original: str, rewritten: str) -> None:
    """Every model tensor of `rewritten` equals the same key in `original`, and none is
    missing."""

    before, after = tf.train.load_checkpoint(original), tf.train.load_checkpoint(rewritten)
    model_keys = {
        k
        for k in before.get_variable_to_shape_map()
        if k.startswith("model/") and ".OPTIMIZER_SLOT" not in k
    }
    kept = {k for k in after.get_variable_to_shape_map() if k.startswith("model/")}
    if kept != model_keys:
        raise BundleError(
            f"{original}: the model-only copy has other tensors "
            f"({sorted(kept ^ model_keys)[:3]} ...)"
        )
    for key in model_keys:
        if not np.array_equal(before.get_tensor(key), after.get_tensor(key)):
            raise BundleError(f"{original}: {key} changed in the model-only copy")


def _file_entry(path: Path) -> dict:
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))


# --------------------------------------------------------------------------- install
def read_manifest(bundle: str | os.PathLike) -> dict:
    """The bundle's manifest (its first member: no need to decompress the rest)."""
    with lzma.open(bundle, "rb") as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
        first = next(iter(tar), None)
        if first is None or first.name != MANIFEST:
            raise BundleError(f"{bundle}: not a bundle (its first member is not {MANIFEST})")
        return json.loads(tar.extractfile(first).read())


def verify(bundle: str | os.PathLike) -> str:
    """The bundle's sha256, after checking it against `<bundle>.sha256`."""
    bundle = Path(bundle)
    if not bundle.is_file():
        raise BundleError(f"{bundle}: no such bundle")
    check = sidecar(bundle)
    if not check.is_file():
        raise BundleError(f"{bundle}: its checksum file {check.name} is missing")
    expected = check.read_text(encoding="utf-8").split()[0]
    actual = sha256_file(bundle)
    if actual != expected:
        raise BundleError(
            f"{bundle} is damaged or not the bundle {check.name} names "
            f"(sha256 {actual[:16]}..., expected {expected[:16]}...)"
        )
    return actual


def install(
    bundle: str | os.PathLike, ctx: Context, steps: Iterable[str] | None = None
) -> Installed:
    """Puts the bundle's steps (or those of `steps` it holds) into ctx.out_dir.

    Checks the bundle's sha256, then each file's; runs the data step if it has
    not run and compares its files with the bundle's record of them. A step
    already done with the current settings (whole or in its records) is left
    alone; one with other settings, or a run killed half-way, is moved aside to
    <step>.stale-bundle. Steps the bundle holds with settings other than the
    current code's are not installed.
    """
    verify(bundle)
    manifest = read_manifest(bundle)
    if manifest.get("format") != FORMAT:
        raise BundleError(
            f"{bundle}: bundle format {manifest.get('format')}, this code reads "
            f"format {FORMAT}; write the bundle again"
        )
    prints = step_fingerprints(STEPS, ctx)
    _check_data_source(bundle, manifest, ctx, prints)
    held = {**manifest["steps"], **manifest["records"]}
    asked = [name for name in held if steps is None or name in steps]
    wanted = [name for name in asked if held[name] == prints.get(name)]
    for name in sorted(set(asked) - set(wanted)):
        ctx.log(
            f"{shown_path(bundle)}: its {name} step was made with other settings than the "
            "current code's: not installed (write the bundle again from a fresh run)"
        )
    done = tuple(n for n in wanted if _is_done(ctx, n, prints))
    todo = [n for n in wanted if n not in done]
    if not todo:
        return Installed((), done)
    _check_data(bundle, manifest, ctx, prints)
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    run_dir = str(ctx.out_dir.resolve())
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=ctx.out_dir) as staging:
        _extract(bundle, manifest, Path(staging), run_dir, todo)
        for name in todo:
            target = ctx.step_dir(name)
            if target.exists():
                stale = target.with_name(f"{name}{STALE_MARK}bundle")
                if stale.exists():
                    shutil.rmtree(stale)
                target.rename(stale)
                ctx.log(f"  {target} did not hold a finished {name} step: moved to {stale}")
            os.replace(Path(staging) / name, target)
    whole = [n for n in todo if n in manifest["steps"]]
    records = [n for n in todo if n not in manifest["steps"]]
    ctx.log(
        f"installed {', '.join(whole) or 'no trained step'}"
        + (f" and the records of {', '.join(records)}" if records else "")
        + f" from {shown_path(bundle)} (sha256 checked)"
    )
    return Installed(tuple(todo), done)


def _is_done(ctx: Context, name: str, prints: dict) -> bool:
    record = read_record(ctx.step_dir(name))
    return record is not None and record.get("fingerprint") == prints[name]


def _check_data_source(bundle, manifest: dict, ctx: Context, prints: dict) -> None:
    """Before anything is installed: the run reads the kind of data the bundle was made
    from, with the same data settings and (for local data) the same files' sha256; a
    refusal names each file that differs and the training it costs."""
    data = manifest["data"]
    source = "local" if ctx.data_dir else "builtin"
    if data["source"] != source:
        raise BundleError(
            f"{bundle}: its models were trained on {data['source']} data, this "
            f"run reads {source} data"
            + (" (set MBERT_DATA_DIR, e.g. ../shared/data)" if not ctx.data_dir else "")
        )
    if data["fingerprint"] == prints["data"]:
        return
    found = data_inputs(ctx).get("files", {})
    differences = data_differences(
        data.get("inputs", {}), found, data_files(ctx.data_dir) if ctx.data_dir else {}
    )
    minutes = sum(filter(None, manifest.get("seconds", {}).values())) / 60
    if differences:
        raise BundleError(
            f"{bundle}: made from other data than this run's, so none of its "
            f"{len(manifest['steps']) + len(manifest['records'])} steps can be installed: "
            f"the pipeline trains them instead, which took {minutes:.0f} min where the "
            "bundle was made. The files that differ (named as in the project's layout):\n"
            + "\n".join(f"  {line}" for line in differences)
        )
    raise BundleError(
        f"{bundle}: made with other data settings than this run's (the data step's "
        "fingerprint differs, its files do not); write the bundle again, or train without it"
    )


def data_differences(recorded: dict, found: dict, paths: dict) -> list[str]:
    """One line per data file that is missing, extra or different in `found` ({name:
    sha256}) against the bundle's `recorded` ones, with where it was found (`paths`: {name:
    path}) and what the pipeline reads it for."""
    lines = []
    for name in sorted({*recorded, *found}):
        role = DATA_FILE_ROLES.get(name, "read by the data step")
        where = f" ({shown_path(paths[name])})" if name in paths else ""
        if name not in found:
            lines.append(f"{name}: missing here; the bundle's data has it: {role}")
        elif name not in recorded:
            lines.append(f"{name}{where}: here, not in the bundle's data: {role}")
        elif found[name] != recorded[name]:
            lines.append(
                f"{name}{where}: differs (sha256 {found[name][:12]}... here, "
                f"{recorded[name][:12]}... in the bundle's data): {role}"
            )
    return lines


def _check_data(bundle, manifest: dict, ctx: Context, prints: dict) -> None:
    """The data step of ctx (run now if needed) has exactly the files the bundle's
    models were trained on."""
    data = manifest["data"]
    if not _is_done(ctx, "data", prints):
        run_steps(STEPS, ctx, only=["data"])
    for name, expected in data["sha256"].items():
        if sha256_file(ctx.step_dir("data") / name) != expected:
            source = f"local data from {ctx.data_dir}" if ctx.data_dir else "builtin data"
            raise BundleError(
                f"{bundle}: its models were trained on other data than this run's "
                f"({ctx.step_dir('data') / name} differs; the bundle was made from "
                f"{data['source']} data, this run reads {source}). Set MBERT_DATA_DIR to the "
                "data the bundle was made from, or train without the bundle."
            )


def _extract(bundle, manifest: dict, staging: Path, run_dir: str, steps: Sequence[str]) -> None:
    """The files of `steps` into staging, each checked against the manifest's sha256."""
    files = manifest["files"]
    seen = set()
    with lzma.open(bundle, "rb") as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
        for member in tar:
            if member.name in (MANIFEST, CHECKSUMS) or member.name.split("/")[0] not in steps:
                continue
            entry = files.get(member.name)
            if (
                entry is None
                or not member.isfile()
                or ".." in Path(member.name).parts
                or Path(member.name).is_absolute()
            ):
                raise BundleError(f"{bundle}: {member.name} is not in its manifest")
            data = tar.extractfile(member).read()
            if hashlib.sha256(data).hexdigest() != entry["sha256"]:
                raise BundleError(f"{bundle}: {member.name} does not match its sha256")
            path = staging / member.name
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix in TEXT_SUFFIXES:
                data = data.decode("utf-8").replace(RUN_DIR_TOKEN, run_dir).encode("utf-8")
            path.write_bytes(data)
            seen.add(member.name)
    missing = [f for f in files if f.split("/")[0] in steps and f not in seen]
    if missing:
        raise BundleError(
            f"{bundle}: {len(missing)} files of its manifest are missing (e.g. {missing[0]})"
        )
