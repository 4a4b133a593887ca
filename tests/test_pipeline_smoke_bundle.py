"""The compact bundle of trained steps (mbert_lib.pipeline.bundle), written from the smoke
run that test_pipeline_smoke.py builds (the same xdist group, so it has run; otherwise
the fixture trains the bundled steps itself), installed into fresh run directories."""

import copy
import shutil
import subprocess

import numpy as np
import pytest
import tensorflow as tf

from mbert_lib.distill.trainer import load_stage_student, read_run
from mbert_lib.pipeline import STEPS, ensure, fast_run_dir, make_context, run_steps
from mbert_lib.pipeline.bundle import (
    BUNDLE_STEPS,
    CHECKSUMS,
    DEFAULT_BUNDLE,
    MANIFEST,
    MAX_BYTES,
    OPTIONAL_BUNDLE_STEPS,
    OPTIONAL_RECORD_STEPS,
    RECORD_STEPS,
    RUN_DIR_TOKEN,
    TEXT_SUFFIXES,
    BundleError,
    install,
    read_manifest,
    sidecar,
    verify,
    write_bundle,
)
from mbert_lib.pipeline.core import read_record, step_fingerprints
from mbert_lib.step_records import is_records_only

pytestmark = pytest.mark.slow  # trains, converts or runs a pipeline: `-m "not slow"` skips it
RECORDS = ("no_transfer", "jkt")  # two of the rows the laptop bundle holds as records only


def quiet(message):
    pass


def smoke_context(out, settings=None, data_from=None):
    """A smoke-recipe context in `out`; with data_from, its finished data step copied
    in (what install would otherwise rebuild, in seconds)."""
    ctx = make_context("smoke", str(out), log=quiet, show_progress=False)
    if settings is not None:
        ctx.settings = settings
    if data_from is not None:
        shutil.copytree(data_from.step_dir("data"), ctx.step_dir("data"))
    return ctx


@pytest.fixture(scope="module")
def source():
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MBERT_DATA_DIR", raising=False)
        ctx = smoke_context(fast_run_dir())
        ensure([*BUNDLE_STEPS, *OPTIONAL_BUNDLE_STEPS, *RECORDS], ctx)
        yield ctx


@pytest.fixture(scope="module")
def bundle(source, tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "smoke.tar.xz"
    manifest = write_bundle(source, out, records=RECORDS, optional_records=(), log=quiet)
    return out, manifest


def test_the_bundle_is_a_plain_tar_that_standard_tools_unpack_and_check(source, bundle, tmp_path):
    """`tar -xJf` unpacks it, `sha256sum -c SHA256SUMS` checks it, and the unpacked
    final student loads in TensorFlow with the run's exact weights."""
    path, manifest = bundle
    if shutil.which("tar") is None or shutil.which("sha256sum") is None:
        pytest.skip("needs the tar and sha256sum commands")
    subprocess.run(["tar", "-xJf", str(path), "-C", str(tmp_path)], check=True)
    checked = subprocess.run(
        ["sha256sum", "--quiet", "-c", CHECKSUMS], cwd=tmp_path, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    unpacked = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert unpacked == {*manifest["files"], MANIFEST, CHECKSUMS}
    prefix = "pkt/model.ckpt"
    original = tf.train.load_checkpoint(str(source.step_dir("pkt") / "model.ckpt"))
    copied = tf.train.load_checkpoint(str(tmp_path / prefix))
    keys = [k for k in original.get_variable_to_shape_map() if k.startswith("model/")]
    assert keys and all(np.array_equal(original.get_tensor(k), copied.get_tensor(k)) for k in keys)
    texts = [
        p.read_text(encoding="utf-8") for p in tmp_path.rglob("*") if p.suffix in TEXT_SUFFIXES
    ]
    assert any(RUN_DIR_TOKEN in t for t in texts)  # the run directory, replaced on install
    assert not any(str(source.out_dir.resolve()) in t for t in texts)


def test_ensure_installs_every_step_as_it_was_and_trains_nothing(source, bundle, tmp_path):
    path, manifest = bundle
    verify(path)
    assert set(manifest["steps"]) == {*BUNDLE_STEPS, *OPTIONAL_BUNDLE_STEPS}
    target = smoke_context(tmp_path / "run")
    target.bundle = path
    ensure(["transfer"], target)
    records = []
    run_steps(STEPS, target, only=list(BUNDLE_STEPS), records=records)
    assert all(r["skipped"] for r in records), records
    for name in BUNDLE_STEPS:
        before, after = read_record(source.step_dir(name)), read_record(target.step_dir(name))
        assert after["finished"] == before["finished"]  # the record, not a re-run
        assert (
            str(source.out_dir.resolve())
            not in target.step_dir(name).joinpath("step.json").read_text()
        )  # paths point at the new run
    assert after["result"]["path"].startswith(str(target.out_dir.resolve()))
    teacher = "teacher/model.ckpt.data-00000-of-00001"
    assert (target.out_dir / teacher).read_bytes() == (source.out_dir / teacher).read_bytes()
    assert not (target.step_dir("teacher") / "checkpoints").exists()  # resume state left out
    experiment, stages = read_run(target.step_dir("pkt"))
    config = experiment.student.build_config()
    for stage in [None, *stages]:  # every snapshot, read as notebook 05 does
        a = load_stage_student(source.step_dir("pkt"), stage, config)
        b = load_stage_student(target.step_dir("pkt"), stage, config)
        assert len(a.weights) == len(b.weights) > 0
        for x, y in zip(a.weights, b.weights):
            np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_records_only_steps_are_installed_as_they_were_without_their_models(
    source, bundle, tmp_path
):
    path, manifest = bundle
    assert set(manifest["records"]) == set(RECORDS)
    target = smoke_context(tmp_path / "run")
    target.bundle = path
    found = ensure(list(RECORDS), target)  # installs them
    records = []
    run_steps(STEPS, target, only=list(RECORDS), records=records)
    assert all(r["skipped"] for r in records), records  # and trains nothing
    for name in RECORDS:
        before = read_record(source.step_dir(name))
        after = read_record(target.step_dir(name))
        assert after["finished"] == before["finished"]
        assert after["result"]["eval"] == before["result"]["eval"]
        assert is_records_only(target.step_dir(name))
        assert not list(target.step_dir(name).rglob("*.data-*"))  # no weights
    _, stages = read_run(found["jkt"]["model_dir"])  # the stage plan notebook 06 draws
    assert stages == read_run(source.step_dir("jkt"))[1]


def test_a_damaged_bundle_is_refused_before_anything_is_written(bundle, tmp_path):
    path, _ = bundle
    damaged = tmp_path / "damaged.tar.xz"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    shutil.copyfile(sidecar(path), sidecar(damaged))
    with pytest.raises(BundleError, match="damaged"):
        install(damaged, smoke_context(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_other_data_than_the_bundles_is_refused(source, bundle, tmp_path):
    path, _ = bundle
    target = smoke_context(tmp_path / "run", data_from=source)
    vocab = target.step_dir("data") / "tokenizer" / "vocab.txt"
    vocab.write_text(vocab.read_text() + "extra\n")
    with pytest.raises(BundleError, match="other data"):
        install(path, target)
    assert not target.step_dir("teacher").exists()


def test_a_bundle_of_other_data_is_refused_before_any_step_runs(bundle, tmp_path):
    path, _ = bundle  # made from the builtin corpus
    target = smoke_context(tmp_path / "run")
    target.data_dir = str(tmp_path / "a_local_copy")  # a run on local data
    with pytest.raises(BundleError, match="trained on builtin data, this run reads local"):
        install(path, target)
    assert not target.step_dir("data").exists()


def test_ensure_goes_on_without_a_bundle_it_cannot_use(source, bundle, tmp_path, monkeypatch):
    from mbert_lib.pipeline import bundle as bundle_module

    def refuse(path, ctx, steps=None):
        raise BundleError("made from other data")

    monkeypatch.setattr(bundle_module, "install", refuse)
    logged = []
    target = smoke_context(tmp_path / "run", data_from=source)
    target.log, target.bundle = logged.append, bundle[0]
    assert ensure(["data"], target)["data"]["source"] == "builtin"
    assert "not using the bundle: made from other data" in logged and target.bundle is None


def test_steps_made_with_other_settings_are_not_installed(source, bundle, tmp_path):
    path, _ = bundle
    settings = copy.deepcopy(source.settings)
    settings["pkt"]["overrides"]["trainer.seed"] = 7
    target = smoke_context(tmp_path / "run", settings, data_from=source)
    done = install(path, target)
    # not pkt, nor transfer after it; the shipped teacher is not in a bundle
    assert set(done.installed) == {"ablation_pd_fmt", "ablation_fmt_at", *RECORDS}
    assert read_record(target.step_dir("pkt")) is None


def test_optional_records_are_bundled_when_current_and_left_out_when_stale(source, tmp_path):
    settings = copy.deepcopy(source.settings)
    settings["jkt"]["overrides"]["trainer.seed"] = 7  # jkt's record is now of other settings
    stale = smoke_context(source.out_dir, settings)
    for ctx, expected in ((source, {"no_transfer", "jkt"}), (stale, {"no_transfer"})):
        notes = []
        out = tmp_path / f"{len(expected)}.tar.xz"
        manifest = write_bundle(
            ctx,
            out,
            steps=(),
            records=("no_transfer",),
            optional_records=("jkt",),
            log=notes.append,
        )
        assert set(manifest["records"]) == expected
        assert any("jkt left out" in n for n in notes) == ("jkt" not in expected)


def test_a_bundle_over_the_limit_leaves_no_file(source, tmp_path):
    """Refused as soon as what xz has written is over the limit, not at the end."""
    out = tmp_path / "small.tar.xz"
    with pytest.raises(BundleError, match="would be at least .* MB, over the 0.001 MB limit"):
        write_bundle(source, out, records=RECORDS, optional_records=(), max_bytes=1000, log=quiet)
    assert list(tmp_path.iterdir()) == []


def test_the_committed_bundle_matches_its_checksum_and_the_laptop_settings(tmp_path):
    """bundles/laptop.tar.xz: what notebooks install in a full run. A change of the
    laptop recipe's settings makes it stale: write it again from a fresh run."""
    verify(DEFAULT_BUNDLE)
    assert DEFAULT_BUNDLE.stat().st_size <= MAX_BYTES
    manifest = read_manifest(DEFAULT_BUNDLE)
    # the data step's print covers the data files' sha256, which a test must not need:
    # the bundle's is taken as given, every later step's is computed from the settings
    ctx = make_context("laptop", str(tmp_path), log=quiet)
    prints = step_fingerprints(STEPS, ctx, known={"data": manifest["data"]["fingerprint"]})
    assert set(BUNDLE_STEPS) <= set(manifest["steps"]) <= {*BUNDLE_STEPS, *OPTIONAL_BUNDLE_STEPS}
    assert manifest["steps"] == {name: prints[name] for name in manifest["steps"]}
    assert set(RECORD_STEPS) <= set(manifest["records"])
    assert set(manifest["records"]) <= {*RECORD_STEPS, *OPTIONAL_RECORD_STEPS}
    assert manifest["records"] == {name: prints[name] for name in manifest["records"]}
    assert manifest["data"]["source"] == "local"  # WikiText-2 + SST-2
