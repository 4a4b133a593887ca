"""The three data sources on fixture files and a fake hub; their errors name the file."""

import dataclasses
import warnings

import pytest

from mbert_lib.data import glue, wikitext
from mbert_lib.data.corpus import load_pretraining_corpus, split_heldout
from mbert_lib.data.errors import DataError

WIKI_VALID = """ 
 = Homarus gammarus = 
 
 Homarus gammarus , a species of <unk> lobster . It is related to the lobster , H. americanus . 
 
 = = Description = = 
 
 It weighs 5 @,@ 000 grams and is 0 @.@ 7 m long , a well @-@ known fact . 
 
 = = = Size = = = 
 
 Larger ones are rare . 
 
 = Second article = 
 
 The second article has one paragraph . And a second sentence . 
"""
WIKI_TEST = " = Third article = \n \n Text of the third article . It ends here . \n"
SST2 = {
    "train.tsv": "sentence\tlabel\na gorgeous film \t1\nhide new secretions \t0\n"
    "the best movie of the year .\t1\nshared with dev \t0\n",
    "dev.tsv": "sentence\tlabel\nShared  with dev\t0\nan unseen dev sentence .\t1\n",
    "test_labeled.tsv": "sentence\tlabel\na test sentence .\t0\n",
}


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "wikitext-2").mkdir()
    (tmp_path / "wikitext-2" / "valid.txt").write_text(WIKI_VALID, encoding="utf-8")
    (tmp_path / "wikitext-2" / "test.txt").write_text(WIKI_TEST, encoding="utf-8")
    sst2 = tmp_path / "glue" / "SST-2"
    sst2.mkdir(parents=True)
    for name, text in SST2.items():
        (sst2 / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_wikitext_articles_markers_and_unk(data_dir):
    documents, files = wikitext.read_local(data_dir)
    assert [f.name.split("/")[-1] for f in files] == ["valid.txt", "test.txt"]
    assert len(documents) == 3, "one document per ' = Title = ' article; sections stay inside"
    first = documents[0]
    assert first[0] == "Homarus gammarus , a species of [UNK] lobster ."
    assert first[1] == "It is related to the lobster , H. americanus ."
    assert first[2] == "It weighs 5,000 grams and is 0.7 m long , a well-known fact ."
    assert first[3] == "Larger ones are rare ."
    assert not any("=" in s or "@" in s for d in documents for s in d), "no headings or markers"
    assert documents[1] == ["The second article has one paragraph .", "And a second sentence ."]


def test_wikitext_takes_train_when_present_and_the_original_file_names(data_dir):
    raw = data_dir / "wikitext-2-raw"
    raw.mkdir()
    (raw / "wiki.train.raw").write_text(" = T = \n Train text . \n", encoding="utf-8")
    documents, files = wikitext.read_local(data_dir)
    assert documents == [["Train text ."]] and files[0].name.endswith("wiki.train.raw")
    documents, _ = wikitext.read_local(data_dir, splits=["valid"])
    assert len(documents) == 2


def test_wikitext_errors_name_the_missing_path(tmp_path, data_dir):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / 'nowhere'} does not exist"):
        wikitext.read_local(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="split 'train' not found.*wikitext-2/train.txt"):
        wikitext.read_local(data_dir, splits=["train"])
    with pytest.raises(FileNotFoundError, match="no wikitext-103 file.*wikitext-103/train.txt"):
        wikitext.read_local(data_dir, name="wikitext-103")
    (data_dir / "wikitext-2" / "test.txt").write_text(" = Only a title = \n", encoding="utf-8")
    with pytest.raises(DataError, match="test.txt: no text"):
        wikitext.read_local(data_dir)


def test_sst2_splits_local(data_dir):
    assert glue.load_sst2("train", data_dir=data_dir)[:2] == [
        ("a gorgeous film", 1),
        ("hide new secretions", 0),
    ]
    assert glue.load_sst2("dev", data_dir=data_dir)[1] == ("an unseen dev sentence .", 1)
    assert glue.load_sst2("test", data_dir=data_dir) == [("a test sentence .", 0)]


def test_sst2_data_dir_from_environment(data_dir, monkeypatch):
    monkeypatch.setenv("MBERT_DATA_DIR", str(data_dir))
    assert len(glue.load_sst2("train")) == 4


@pytest.mark.parametrize(
    "text, message",
    [
        ("", r"train.tsv: empty file"),
        ("index\tsentence\n0\tno label\n", r"train.tsv:1: expected the header.*test_labeled"),
        ("sentence\tlabel\ngood\t1\nbad\t2\n", r"train.tsv:3: label must be 0 or 1, got '2'"),
        ("sentence\tlabel\ngood\t1\nbad 0\n", r"train.tsv:3: expected 2 tab-separated fields"),
        ("sentence\tlabel\n\t1\n", r"train.tsv:2: empty sentence"),
    ],
)
def test_malformed_sst2_tsv_names_file_and_line(data_dir, text, message):
    (data_dir / "glue" / "SST-2" / "train.tsv").write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        glue.load_sst2("train", data_dir=data_dir)


def test_a_line_over_the_limit_is_refused_at_once_naming_its_number(data_dir, monkeypatch):
    """A file whose line breaks were lost would be tokenized as one "sentence" for minutes
    and gigabytes; both readers refuse it naming the line instead."""
    from mbert_lib.data import text

    monkeypatch.setattr(text, "MAX_LINE_CHARS", 50)
    (data_dir / "glue" / "SST-2" / "train.tsv").write_text(
        "sentence\tlabel\ngood\t1\n" + "very " * 20 + "bad\t0\n", encoding="utf-8"
    )
    with pytest.raises(
        DataError,
        match=r"train.tsv:3: a line of 105 characters, over the "
        r"limit of 50",
    ):
        glue.load_sst2("train", data_dir=data_dir)
    wiki = data_dir / "wikitext-2" / "valid.txt"
    wiki.write_text(" = A = \n" + "word " * 11 + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"valid.txt:2: a line of 55 characters"):
        wikitext.read_local(data_dir, splits=["valid"])


def test_a_byte_order_mark_is_dropped_by_both_readers(data_dir):
    """A Windows editor's UTF-8 BOM: not a character of the first header (SST-2) nor of
    the first line of text (WikiText)."""
    for path in (data_dir / "glue" / "SST-2" / "train.tsv", data_dir / "wikitext-2" / "valid.txt"):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert glue.load_sst2("train", data_dir=data_dir)[0] == ("a gorgeous film", 1)
    documents, _ = wikitext.read_local(data_dir, splits=["valid"])
    assert documents[0][0] == "Homarus gammarus , a species of [UNK] lobster ."
    assert not any("\ufeff" in s for d in documents for s in d)


def test_a_training_file_of_one_label_is_refused(data_dir):
    """Every training example labelled 0: a classifier would learn to answer 0 whatever the
    sentence. The dev and test files may hold one class (a small labeled test set can)."""
    sst2 = data_dir / "glue" / "SST-2"
    (sst2 / "train.tsv").write_text("sentence\tlabel\ngood\t0\nbad\t0\n", encoding="utf-8")
    with pytest.raises(
        DataError,
        match=r"train.tsv: all 2 training examples have the label '0'; a classifier needs "
        r"examples of more than one of SST-2's classes \['0', '1'\]",
    ):
        glue.load_sst2("train", data_dir=data_dir)
    (sst2 / "dev.tsv").write_text("sentence\tlabel\ngood\t1\n", encoding="utf-8")
    assert glue.load_sst2("dev", data_dir=data_dir) == [("good", 1)]
    stsb = data_dir / "glue" / "STS-B"
    stsb.mkdir()
    header = "\t".join("index genre file year old s1 s2 sentence1 sentence2 score".split())
    row = "\t".join("0 g f y 0 s s a b 2.5".split())
    (stsb / "train.tsv").write_text(f"{header}\n{row}\n{row}\n", encoding="utf-8")
    assert len(glue.load_glue("stsb", "train", data_dir=data_dir)) == 2  # a regression: scores


def test_sst2_missing_directory_and_file(tmp_path, data_dir):
    with pytest.raises(FileNotFoundError, match="no SST-2 directory.*glue/SST-2"):
        glue.load_sst2("train", data_dir=tmp_path / "wikitext-2")
    (data_dir / "glue" / "SST-2" / "dev.tsv").unlink()
    with pytest.raises(FileNotFoundError, match="SST-2/dev.tsv does not exist"):
        glue.load_sst2("dev", data_dir=data_dir)


def _fake_hub(path, name, split):
    tables = {
        ("Salesforce/wikitext", "wikitext-2-raw-v1", "train"): [
            {"text": line + "\n"} for line in WIKI_VALID.split("\n")
        ],
        ("nyu-mll/glue", "sst2", "train"): [
            {"sentence": "hub train one ", "label": 1},
            {"sentence": "the dev one", "label": 0},
        ],
        ("nyu-mll/glue", "sst2", "validation"): [{"sentence": "The dev  one", "label": 0}],
        ("nyu-mll/glue", "sst2", "test"): [{"sentence": "hidden", "label": -1}],
    }
    return tables[(path, name, split)]


def test_hub_source_takes_the_same_path_as_local(data_dir):
    hub = load_pretraining_corpus("hub", hub_loader=_fake_hub)
    local = load_pretraining_corpus(
        "local", data_dir, wikitext_splits=["valid"], include_sst2=False
    )
    assert hub.documents[:2] == local.documents
    assert hub.name == "hub-wikitext-2+sst2"
    assert hub.documents[-1] == ["hub train one"], "the sentence also in validation is dropped"
    assert glue.load_sst2("dev", "hub", hub_loader=_fake_hub) == [("The dev  one", 0)]
    with pytest.raises(DataError, match="row 0 has no label"):
        glue.load_sst2("test", "hub", hub_loader=_fake_hub)


def test_hub_failure_suggests_the_offline_sources():
    def offline(path, name, split):
        raise ConnectionError("Couldn't reach 'Salesforce/wikitext' on the Hub")

    with pytest.raises(DataError, match=r"(?s)Couldn't reach.*--data-dir.*MBERT_DATA_DIR.*builtin"):
        load_pretraining_corpus("hub", hub_loader=offline)
    # a GLUE task has no builtin source; its way offline is the stand-in task
    with pytest.raises(DataError, match=r"(?s)--data-dir.*--task builtin_shuffled") as failed:
        glue.load_sst2("dev", "hub", hub_loader=offline)
    assert "--source builtin" not in str(failed.value)


def test_local_corpus_never_contains_sst2_dev_or_test(data_dir):
    corpus = load_pretraining_corpus("local", data_dir)
    sentences = {s.lower() for d in corpus.documents for s in d}
    assert "the best movie of the year ." in sentences
    assert "shared with dev" not in sentences, "a train sentence equal to a dev one is dropped"
    assert not {s.lower() for s, _ in glue.load_sst2("dev", data_dir=data_dir)} & sentences
    assert "1 dropped" in corpus.files[-1].note
    assert corpus.name == "local-wikitext-2+sst2" and len(corpus.files) == 3


def test_source_errors(monkeypatch):
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    with pytest.raises(DataError, match="needs a directory.*--data-dir.*MBERT_DATA_DIR"):
        load_pretraining_corpus("local")
    with pytest.raises(DataError, match="unknown source 'web'"):
        load_pretraining_corpus("web")


def test_checksum_mismatch_warns_but_loads(data_dir):
    documents, files = wikitext.read_local(data_dir)
    assert files[0].expected_sha256 is not None and files[0].checksum_status == "MISMATCH"
    with pytest.warns(UserWarning, match="valid.txt: sha256 .* differs from the published"):
        files[0].warn_on_mismatch()
    unknown = dataclasses.replace(files[0], expected_sha256=None)
    assert unknown.checksum_status == "no published checksum"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        unknown.warn_on_mismatch()


def test_heldout_split_is_whole_documents_by_content():
    documents = [[f"document {i} sentence {j} ." for j in range(1 + i % 5)] for i in range(40)]
    train, held = split_heldout(documents, 0.1)
    assert sorted(map(tuple, train + held)) == sorted(map(tuple, documents))
    total, held_words = (sum(len(s.split()) for d in docs for s in d) for docs in (documents, held))
    assert 0.1 <= held_words / total < 0.1 + 20 / total, "just past 10% of the words"
    assert split_heldout(list(reversed(documents)), 0.1)[1] == list(reversed(held)), (
        "the choice depends on the documents, not their order"
    )
    assert len(split_heldout(documents[:4], 0.9)[0]) == 2, "two documents stay for training"
    with pytest.raises(DataError, match="too small"):
        split_heldout(documents[:3], 0.5)
