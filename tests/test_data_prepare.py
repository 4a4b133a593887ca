"""The prepare step end to end on a fixture directory: outputs, stage reuse, no leaks."""

import os
import time

import numpy as np
import pytest

from mbert_lib.data import (
    PrepareSettings,
    load_tokenizer,
    make_pretraining_dataset,
    parse_documents,
    prepare,
    prepare_pretraining_data,
    read_manifest,
)
from mbert_lib.data.errors import DataError
from mbert_lib.run_lock import RunLockedError, run_lock

WORDS = (
    "river castle engine storm garden letter silver market winter bridge harbor forest "
    "signal window orange copper ladder island meadow"
).split()
# The fixtures borrow the real files' names, so their checksums differ from the published ones.
pytestmark = pytest.mark.filterwarnings("ignore:.*differs from the published:UserWarning")
OPTIONS = dict(
    vocab_size=120,
    seq_length=32,
    max_predictions_per_seq=5,
    dupe_factor=2,
    heldout_fraction=0.2,
)


def settings(data_dir, out, **changes) -> PrepareSettings:
    """The fixture's corpus ("local", data_dir) prepared into `out` with OPTIONS and
    `changes`."""
    return PrepareSettings("local", data_dir, out, **{**OPTIONS, **changes})


@pytest.fixture
def data_dir(tmp_path):
    rng = np.random.default_rng(0)

    def sentence():
        return " ".join(rng.choice(WORDS, rng.integers(4, 12))).capitalize() + " ."

    articles = []
    for a in range(20):
        paragraphs = [" ".join(sentence() for _ in range(4)) for _ in range(3)]
        articles.append(f" = Article {a} = \n \n " + " \n \n = = Part = = \n \n ".join(paragraphs))
    (tmp_path / "wikitext-2").mkdir()
    (tmp_path / "wikitext-2" / "valid.txt").write_text("\n".join(articles[:10]), encoding="utf-8")
    (tmp_path / "wikitext-2" / "test.txt").write_text("\n".join(articles[10:]), encoding="utf-8")
    sst2 = tmp_path / "SST-2"
    sst2.mkdir()
    train = [f"{sentence()}\t{i % 2}" for i in range(150)] + ["a dev sentence .\t1"]
    (sst2 / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(train) + "\n")
    (sst2 / "dev.tsv").write_text("sentence\tlabel\nA dev  sentence .\t1\n")
    return tmp_path


def test_prepare_writes_every_stage_and_reuses_them(data_dir, tmp_path):
    out, lines = tmp_path / "prepared", []
    first = prepare_pretraining_data(settings(data_dir, out), log=lines.append, progress=False)
    assert first.reused == {"corpus": False, "tokenizer": False, "examples": False}
    printed = "\n".join(lines)
    assert "valid.txt" in printed and "sha256" in printed and "(MISMATCH)" in printed
    assert "1 dropped because they occur in dev/test" in printed

    train = parse_documents((out / "corpus" / "train.txt").read_text())
    held = parse_documents((out / "corpus" / "heldout.txt").read_text())
    held_words, all_words = (
        sum(len(s.split()) for d in docs for s in d) for docs in (held, train + held)
    )
    assert 0.2 <= held_words / all_words < 0.4
    assert not {tuple(d) for d in held} & {tuple(d) for d in train}
    for name in ("train.txt", "heldout.txt"):
        assert "dev sentence" not in (out / "corpus" / name).read_text()

    tokenizer = load_tokenizer(first.tokenizer_dir)
    manifest = read_manifest(first.examples_dir)
    assert tokenizer.vocab_size == 120 == manifest["vocab_size"]
    assert manifest["seq_length"] == 32
    assert manifest["counts"]["train"] > 0 and manifest["counts"]["eval"] > 0
    assert manifest["key"]["tokenizer_sha256"] == tokenizer.sha256
    batch = next(iter(make_pretraining_dataset(first.examples_dir, 4)))
    assert batch["input_word_ids"].shape == (4, 32)
    assert int(batch["input_word_ids"].numpy().max()) < 120

    again = prepare_pretraining_data(settings(data_dir, out), log=lines.append, progress=False)
    assert again.reused == {"corpus": True, "tokenizer": True, "examples": True}
    assert again.manifest == first.manifest

    longer = prepare_pretraining_data(
        settings(data_dir, out, seq_length=48), log=lines.append, progress=False
    )
    assert longer.reused == {"corpus": True, "tokenizer": True, "examples": False}
    assert read_manifest(out / "examples")["seq_length"] == 48


def test_prepare_script_runs_and_reports_errors(data_dir, tmp_path, capsys):
    from data_scripts.prepare_pretraining_data import main

    args = [
        "--data-dir",
        str(data_dir),
        "--output-dir",
        str(tmp_path / "p"),
        "--vocab-size",
        "100",
        "--seq-length",
        "32",
        "--max-predictions-per-seq",
        "5",
        "--dupe-factor",
        "1",
        "--heldout-fraction",
        "0.2",
    ]
    assert main(args) == 0
    assert "eval:" in capsys.readouterr().out
    assert main(["--data-dir", str(tmp_path / "missing")]) == 2
    assert "missing does not exist" in capsys.readouterr().err


def test_prepare_with_a_given_vocab_file(data_dir, tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    prepared = prepare_pretraining_data(
        settings(data_dir, tmp_path / "p", include_sst2=False, vocab_file=tmp_path / "vocab.txt"),
        log=lambda _: None,
        progress=False,
    )
    assert load_tokenizer(prepared.tokenizer_dir).vocab == tuple(vocab)
    with pytest.raises(DataError, match="heldout_fraction"):
        prepare_pretraining_data(
            settings(data_dir, tmp_path / "q", heldout_fraction=0.0),
            log=lambda _: None,
            progress=False,
        )


def test_a_given_vocab_does_not_stay_in_a_shared_cache_under_the_trained_ones_record(
    data_dir, tmp_path
):
    """One output directory (as the default cache is for every run): trained, then a given
    vocabulary, then trained again: each run gets the tokenizer it asked for."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + WORDS
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    out, quiet = tmp_path / "shared", {"log": lambda _: None, "progress": False}
    trained = prepare_pretraining_data(settings(data_dir, out), **quiet)
    trained_vocab = load_tokenizer(trained.tokenizer_dir).vocab
    given = prepare_pretraining_data(
        settings(data_dir, out, vocab_file=tmp_path / "vocab.txt"), **quiet
    )
    assert given.reused["tokenizer"] is False
    assert load_tokenizer(given.tokenizer_dir).vocab == tuple(vocab)
    assert read_manifest(given.examples_dir)["vocab_size"] == len(vocab)
    again = prepare_pretraining_data(settings(data_dir, out), **quiet)
    assert again.reused["tokenizer"] is False  # retrained, not "reused"
    assert load_tokenizer(again.tokenizer_dir).vocab == trained_vocab != tuple(vocab)
    assert (
        read_manifest(again.examples_dir)["key"]["tokenizer_sha256"]
        == load_tokenizer(again.tokenizer_dir).sha256
    )
    same = prepare_pretraining_data(settings(data_dir, out), **quiet)
    assert same.reused == {"corpus": True, "tokenizer": True, "examples": True}


def test_a_cache_held_by_another_run_is_waited_for_then_refused_naming_it(
    data_dir, tmp_path, monkeypatch
):
    """Two runs preparing into one data.cache_dir would mix their files: while one holds the
    cache's lock (here: this process, through another open file), the other waits up to
    CACHE_WAIT_SECONDS (shortened here), then is refused before it writes, told who holds
    it."""
    monkeypatch.setattr(prepare, "CACHE_WAIT_SECONDS", 1.0)
    out = tmp_path / "shared"
    with run_lock(out, "data.cache_dir"):
        start = time.monotonic()
        with pytest.raises(
            RunLockedError,
            match=rf"{out} is in use by another run \(pid {os.getpid()} on .*\): wait for it "
            r"to finish, or give this one another directory \(data.cache_dir\)",
        ):
            prepare_pretraining_data(settings(data_dir, out), log=lambda _: None, progress=False)
        assert time.monotonic() - start >= 1.0  # it waited its turn first
    assert sorted(p.name for p in out.iterdir()) == [".lock"]
    prepared = prepare_pretraining_data(settings(data_dir, out), log=lambda _: None, progress=False)
    assert prepared.reused == {"corpus": False, "tokenizer": False, "examples": False}


def test_a_data_section_reaches_preparation_field_by_field(monkeypatch):
    """prepare_data_section passes every DataSection field on, under the preparation's name
    (a new field that is not passed on fails here)."""
    import dataclasses

    from mbert_lib.data import prepare as prepare_module
    from mbert_lib.experiment import DataSection

    seen = {}
    monkeypatch.setattr(
        prepare_module,
        "prepare_pretraining_data",
        lambda settings, **kw: seen.update(dataclasses.asdict(settings), **kw),
    )
    section = DataSection(
        source="local",
        data_dir="/d",
        vocab_file="/v.txt",
        vocab_size=77,
        lower_case=False,
        seq_length=33,
        max_predictions_per_seq=4,
        masked_lm_prob=0.2,
        dupe_factor=3,
        cache_dir="/c",
        seed=9,
    )
    prepare_module.prepare_data_section(section, progress=False)
    renamed = {"cache_dir": "output_dir", "lower_case": "do_lower_case"}
    for field in dataclasses.fields(DataSection):
        assert seen[renamed.get(field.name, field.name)] == getattr(section, field.name), field
    assert seen["progress"] is False


def test_the_data_step_and_the_trainers_read_one_data_section(tmp_path):
    """The pipeline's data step prepares data_section(ctx); a trainer's experiment gets the
    same section through data_overrides (plus the model's vocabulary size)."""
    from mbert_lib.pipeline import make_context
    from mbert_lib.pipeline.steps import data_section, load_step_experiment

    ctx = make_context("smoke", str(tmp_path))
    section = data_section(ctx)
    assert section.cache_dir == str(tmp_path / "data") and section.source == "builtin"
    teacher = load_step_experiment(ctx, ctx.settings["teacher"])
    assert teacher.data == section
    assert teacher.model.build_config().vocab_size == section.vocab_size
