"""The bundle's data check (mbert_lib.pipeline.bundle, pipeline.steps.data_files): the same
files in the original releases' layout are the same data; other files are named, with
what the pipeline reads them for and the training the bundle would have saved."""

import io
import json
import lzma
import tarfile

import pytest

from mbert_lib.data.provenance import sha256_file
from mbert_lib.pipeline import STEPS, make_context
from mbert_lib.pipeline.bundle import FORMAT, MANIFEST, BundleError, install, sidecar
from mbert_lib.pipeline.core import step_fingerprints
from mbert_lib.pipeline.steps import DATA_FILE_ROLES, data_files, data_inputs

WIKI = " = Lobster = \n The lobster is a large crustacean . \n It lives in the sea . \n"
SST2 = "sentence\tlabel\na fine film\t1\na dull film\t0\n"


def project_layout(root):
    """The project's layout: wikitext-2/{split}.txt, glue/SST-2/*.tsv."""
    (root / "wikitext-2").mkdir(parents=True)
    (root / "glue" / "SST-2").mkdir(parents=True)
    for split in ("valid", "test"):
        (root / "wikitext-2" / f"{split}.txt").write_text(WIKI + split)
    for name in ("train", "dev", "test_labeled"):
        (root / "glue" / "SST-2" / f"{name}.tsv").write_text(SST2 + name)
    return root


def release_layout(root, project):
    """The same bytes as the public releases name them: wikitext-2/wiki.{split}.tokens
    (WikiText-2's zip) and SST-2/*.tsv (GLUE's), plus GLUE's unlabeled test.tsv."""
    (root / "wikitext-2").mkdir(parents=True)
    (root / "SST-2").mkdir(parents=True)
    for split in ("valid", "test"):
        source = project / "wikitext-2" / f"{split}.txt"
        (root / "wikitext-2" / f"wiki.{split}.tokens").write_bytes(source.read_bytes())
    for name in ("train", "dev", "test_labeled"):
        source = project / "glue" / "SST-2" / f"{name}.tsv"
        (root / "SST-2" / f"{name}.tsv").write_bytes(source.read_bytes())
    (root / "SST-2" / "test.tsv").write_text("index\tsentence\n0\ta film\n")
    return root


def context(out, data_dir):
    return make_context("smoke", str(out), str(data_dir), log=lambda _: None)


def test_the_same_files_in_the_releases_layout_are_the_same_data(tmp_path):
    project = project_layout(tmp_path / "project")
    release = release_layout(tmp_path / "release", project)
    inputs = data_inputs(context(tmp_path / "a", project))
    assert inputs == data_inputs(context(tmp_path / "b", release))
    # keyed by the project's layout, each the sha256 of the file's bytes
    assert set(inputs["files"]) == {
        "wikitext-2/valid.txt",
        "wikitext-2/test.txt",
        "glue/SST-2/train.tsv",
        "glue/SST-2/dev.tsv",
        "glue/SST-2/test_labeled.tsv",
    }
    found = data_files(release)
    for name, path in found.items():
        assert inputs["files"][name] == sha256_file(path)
    assert found["wikitext-2/valid.txt"].name == "wiki.valid.tokens"


def fake_bundle(path, project, seconds):
    """A bundle holding only its manifest: made from the data in `project`."""
    ctx = context(path.parent / "made", project)
    manifest = {
        "format": FORMAT,
        "steps": {"pkt": "0" * 16},
        "records": {"no_transfer": "0" * 16},
        "seconds": seconds,
        "data": {
            "source": "local",
            "fingerprint": step_fingerprints(STEPS, ctx)["data"],
            "inputs": data_inputs(ctx)["files"],
            "sha256": {},
        },
        "files": {},
    }
    data = json.dumps(manifest).encode()
    with lzma.open(path, "wb") as xz, tarfile.open(fileobj=xz, mode="w") as tar:
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    sidecar(path).write_text(f"{sha256_file(path)}  {path.name}\n")
    return path


def test_other_data_is_refused_naming_each_file_its_use_and_the_cost(tmp_path):
    project = project_layout(tmp_path / "project")
    bundle = fake_bundle(tmp_path / "b.tar.xz", project, {"pkt": 360.0, "no_transfer": 240.0})
    release = release_layout(tmp_path / "release", project)
    (release / "wikitext-2" / "wiki.train.tokens").write_text(WIKI + "train")
    (release / "SST-2" / "dev.tsv").write_text(SST2 + "another dev")
    (release / "SST-2" / "test_labeled.tsv").unlink()
    target = context(tmp_path / "run", release)
    with pytest.raises(BundleError) as refused:
        install(bundle, target)
    message = str(refused.value)
    assert "none of its 2 steps can be installed" in message and "took 10 min" in message
    by_name = {line.split()[0].rstrip(":"): line for line in message.splitlines()[1:]}
    assert set(by_name) == {
        "wikitext-2/train.txt",
        "glue/SST-2/dev.tsv",
        "glue/SST-2/test_labeled.tsv",
    }
    assert "here, not in the bundle's data" in by_name["wikitext-2/train.txt"]
    assert "wiki.train.tokens" in by_name["wikitext-2/train.txt"]
    assert "differs" in by_name["glue/SST-2/dev.tsv"]
    assert "missing here" in by_name["glue/SST-2/test_labeled.tsv"]
    for name, line in by_name.items():
        assert line.endswith(DATA_FILE_ROLES[name])
    assert not target.out_dir.exists()  # refused before anything was written


def test_the_same_files_in_the_releases_layout_pass_the_data_check(tmp_path):
    project = project_layout(tmp_path / "project")
    bundle = fake_bundle(tmp_path / "b.tar.xz", project, {"pkt": 360.0})
    release = release_layout(tmp_path / "release", project)
    target = context(tmp_path / "run", release)
    # past the data check: refused further on, for the steps' fingerprints the fake holds
    done = install(bundle, target)
    assert done.installed == () and done.already_done == ()
