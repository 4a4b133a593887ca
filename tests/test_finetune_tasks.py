"""Task loaders on fixture files in GLUE's layout and a fake hub; the offline builtin task."""

import numpy as np
import pytest

from mbert_lib.data import glue
from mbert_lib.data.errors import DataError
from mbert_lib.data.glue import GlueExample
from mbert_lib.finetune import builtin_task
from mbert_lib.finetune.tasks import TASKS, check_labels, get_task

FILES = {
    "MRPC/dev.tsv": "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    '1\t702876\t702977\tHe said "yes" .\tHe agreed .\n'
    "0\t2108705\t2108831\tShares rose .\tIt rained .\n",
    "STS-B/dev.tsv": "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
    "sentence2\tscore\n"
    "0\tmain-captions\tMSRvid\t2012test\t0000\tnone\tnone\tA man plays .\t"
    "A man is playing .\t5.000\n"
    "1\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA cat .\t"
    "A car .\t0.5\n",
    "CoLA/dev.tsv": "gj04\t1\t\tThe sailors rode the breeze clear of the rocks.\n"
    "gj04\t0\t*\tThe more we study verbs, the crazier they get get.\n",
    "RTE/dev.tsv": "index\tsentence1\tsentence2\tlabel\n"
    "0\tDana Reeve died .\tChristopher Reeve had an accident .\tnot_entailment\n"
    "1\tA cat sat .\tAn animal sat .\tentailment\n",
    "SST-2/dev.tsv": "sentence\tlabel\nit 's a charming journey . \t1\nunflinchingly bleak\t0\n",
}


@pytest.fixture
def data_dir(tmp_path):
    for name, text in FILES.items():
        path = tmp_path / "glue" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_every_glue_format_reads_its_columns_and_labels(data_dir):
    assert glue.load_glue("mrpc", "dev", data_dir=data_dir) == [
        GlueExample('He said "yes" .', "He agreed .", 1),
        GlueExample("Shares rose .", "It rained .", 0),
    ]
    assert glue.load_glue("stsb", "dev", data_dir=data_dir) == [
        GlueExample("A man plays .", "A man is playing .", 5.0),
        GlueExample("A cat .", "A car .", 0.5),
    ]
    assert glue.load_glue("cola", "dev", data_dir=data_dir) == [
        GlueExample("The sailors rode the breeze clear of the rocks.", None, 1),
        GlueExample("The more we study verbs, the crazier they get get.", None, 0),
    ]
    assert [e.label for e in glue.load_glue("rte", "dev", data_dir=data_dir)] == [1, 0]
    assert get_task("rte").label_names[1] == "not_entailment"
    assert glue.load_glue("sst2", "dev", data_dir=data_dir)[0] == GlueExample(
        "it 's a charming journey .", None, 1
    )


def test_a_task_directory_directly_under_data_dir_works_too(data_dir, tmp_path):
    (data_dir / "glue").rename(tmp_path / "flat")
    assert len(glue.load_glue("mrpc", "dev", data_dir=tmp_path / "flat")) == 2


@pytest.mark.parametrize(
    "name, text, message",
    [
        (
            "MRPC/dev.tsv",
            "Quality\t#1 String\t#2 String\n2\ta\tb\n",
            r"dev.tsv:2: label must be 0 or 1, got '2'",
        ),
        (
            "MRPC/dev.tsv",
            "Quality\t#1 ID\t#1 String\n1\t3\ta\n",
            r"dev.tsv:1: expected the header.*'#2 String'",
        ),
        (
            "STS-B/dev.tsv",
            "sentence1\tsentence2\tscore\na\tb\t7\n",
            r"dev.tsv:2: label must be a number in \[0, 5\], got '7'",
        ),
        ("STS-B/dev.tsv", "sentence1\tsentence2\tscore\na\tb\thigh\n", r"got 'high'"),
        (
            "RTE/dev.tsv",
            "sentence1\tsentence2\tlabel\na\tb\tcontradiction\n",
            r"dev.tsv:2: label must be entailment or not_entailment, got 'contradiction'",
        ),
        ("CoLA/dev.tsv", "gj04\t1\tThe sentence.\n", r"dev.tsv:1: expected 4 tab-separated fields"),
        (
            "RTE/dev.tsv",
            "sentence1\tsentence2\tlabel\na\t\tentailment\n",
            r"dev.tsv:2: empty sentence",
        ),
        (
            "SST-2/dev.tsv",
            "index\tsentence\n0\tno label\n",
            r"dev.tsv:1: expected the header.*test_labeled",
        ),
    ],
)
def test_malformed_files_name_the_file_line_and_problem(data_dir, name, text, message):
    task = {"MRPC": "mrpc", "STS-B": "stsb", "RTE": "rte", "CoLA": "cola", "SST-2": "sst2"}[
        name.split("/")[0]
    ]
    (data_dir / "glue" / name).write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        glue.load_glue(task, "dev", data_dir=data_dir)


def test_missing_task_directory_split_and_unknown_names(data_dir):
    with pytest.raises(FileNotFoundError, match="no MRPC directory"):
        glue.load_glue("mrpc", "dev", data_dir=data_dir / "glue" / "SST-2")
    with pytest.raises(FileNotFoundError, match="MRPC/train.tsv does not exist"):
        glue.load_glue("mrpc", "train", data_dir=data_dir)
    with pytest.raises(DataError, match="unknown task 'sst5'; known tasks: .*builtin_shuffled"):
        get_task("sst5")
    with pytest.raises(DataError, match="unknown MRPC split 'validation'"):
        glue.load_glue("mrpc", "validation", data_dir=data_dir)


def _fake_hub(path, name, split):
    return {
        ("nyu-mll/glue", "rte", "validation"): [
            {"sentence1": "A cat sat .", "sentence2": "An animal sat .", "label": 0}
        ],
        ("nyu-mll/glue", "stsb", "validation"): [
            {"sentence1": "a", "sentence2": "b", "label": 3.2}
        ],
        ("nyu-mll/glue", "mrpc", "validation"): [{"sentence1": "a", "sentence2": "b", "label": 3}],
    }[(path, name, split)]


def test_hub_rows_take_the_same_path_and_are_checked():
    assert glue.load_glue("rte", "dev", "hub", hub_loader=_fake_hub) == [
        GlueExample("A cat sat .", "An animal sat .", 0)
    ]
    assert glue.load_glue("stsb", "dev", "hub", hub_loader=_fake_hub)[0].label == 3.2
    with pytest.raises(DataError, match=r"split validation row 0: label must be a class id"):
        glue.load_glue("mrpc", "dev", "hub", hub_loader=_fake_hub)


def test_sources_resolve_and_glue_is_never_builtin(data_dir, monkeypatch):
    monkeypatch.delenv("MBERT_DATA_DIR", raising=False)
    sst2 = get_task("sst2")
    assert sst2.resolve_source("auto", str(data_dir)) == "local"
    assert sst2.resolve_source("auto") == "hub"
    assert get_task("builtin_shuffled").resolve_source("auto") == "builtin"
    with pytest.raises(DataError, match="no source 'builtin'.*--task builtin_shuffled"):
        sst2.resolve_source("builtin")
    with pytest.raises(DataError, match="no source 'local'"):
        get_task("builtin_shuffled").resolve_source("local")


def test_labels_outside_the_classes_are_refused():
    check_labels(get_task("sst2"), np.array([0, 1, 1]), "x")
    with pytest.raises(DataError, match=r"x: labels \[2, 5\] are outside task 'sst2'.*0..1"):
        check_labels(get_task("sst2"), np.array([0, 2, 5]), "x")
    with pytest.raises(DataError, match="finite"):
        check_labels(get_task("stsb"), np.array([1.0, np.nan]), "x")


def test_task_scores_use_their_metrics():
    logits = np.array([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    assert get_task("mrpc").score(logits, np.array([0, 1, 1])) == {
        "f1": pytest.approx(2 / 3),
        "accuracy": pytest.approx(2 / 3),
    }
    assert TASKS["stsb"].num_classes == 1 and TASKS["stsb"].is_regression
    assert TASKS["stsb"].score(np.array([[1.0], [2.0], [3.0]]), np.array([0.5, 1.0, 4.0])) == {
        # dx = [-1, 0, 1], dy = y - 11/6: Σ dx·dy = 3.5, Σ dx² = 2, Σ dy² = 43/6
        "spearman": pytest.approx(1.0),
        "pearson": pytest.approx(3.5 / (2 * 43 / 6) ** 0.5),
    }


DOCS = [
    [f"Document {d} sentence {s} has some ordinary words in it." for s in range(4)]
    for d in range(40)
]
DOCS[3][0] = DOCS[7][0] = "This exact sentence occurs in two different documents here."


def test_builtin_task_is_deterministic_balanced_and_its_splits_are_disjoint():
    train = builtin_task.builtin_shuffled_examples("train", DOCS)
    dev = builtin_task.builtin_shuffled_examples("dev", DOCS)
    assert train == builtin_task.builtin_shuffled_examples("train", DOCS)
    originals = {s for d in DOCS for s in d}
    dev_docs = {i for i, d in enumerate(DOCS) if any(e.text_a in d for e in dev if e.label == 1)}
    train_docs = {
        i for i, d in enumerate(DOCS) if any(e.text_a in d for e in train if e.label == 1)
    }
    assert dev_docs and train_docs and not dev_docs & train_docs
    assert not {e.text_a for e in train} & {e.text_a for e in dev}
    for e in train + dev:
        assert (e.text_a in originals) == (e.label == 1)
        assert e.text_b is None
    shuffled = [e for e in train + dev if e.label == 0]
    assert 0.3 < len(shuffled) / len(train + dev) < 0.7
    for e in shuffled:  # same words, another order, the period still last
        assert e.text_a.endswith(".")
        assert any(sorted(e.text_a[:-1].split()) == sorted(s[:-1].split()) for s in originals)


def test_builtin_task_dev_is_the_pretraining_heldout_and_has_no_test_split():
    from mbert_lib.data.corpus import split_heldout

    _, heldout = split_heldout(DOCS)  # what prepare_pretraining_data holds out
    dev = builtin_task.builtin_shuffled_examples("dev", DOCS)
    assert {e.text_a for e in dev if e.label == 1} <= {s for d in heldout for s in d}
    with pytest.raises(DataError, match="splits 'train' and 'dev', not 'test'"):
        builtin_task.builtin_shuffled_examples("test", DOCS)


def test_shuffle_always_changes_the_order():
    rng = np.random.default_rng(0)
    for sentence in ["a b.", "same same same different.", "one two three four five six."]:
        for _ in range(20):
            assert builtin_task.shuffle_words(sentence, rng) != sentence
