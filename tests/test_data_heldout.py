"""Held-out examples per source, and the token-by-token view of an example."""

import numpy as np
import pytest

from mbert_lib.data import (
    PrepareSettings,
    example_statistics,
    load_pretraining_corpus,
    load_tokenizer,
    original_tokens,
    prepare_pretraining_data,
    read_tfrecord,
)
from mbert_lib.data.example_view import example_table
from mbert_lib.data.heldout import heldout_examples_by_source, partition_documents

pytestmark = pytest.mark.filterwarnings("ignore:.*differs from the published:UserWarning")
# Disjoint word lists: every token of an example tells which source it came from.
WIKI = "river castle engine storm garden letter silver market winter bridge".split()
SST2 = "funny boring great awful moving dull charming tedious brilliant clumsy".split()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    rng = np.random.default_rng(0)

    def sentence(words):
        return " ".join(rng.choice(words, rng.integers(4, 12))).capitalize() + " ."

    articles = [
        f" = Article {a} = \n \n " + " ".join(sentence(WIKI) for _ in range(12)) for a in range(24)
    ]
    (root / "wikitext-2").mkdir()
    (root / "wikitext-2" / "valid.txt").write_text("\n".join(articles), encoding="utf-8")
    (root / "SST-2").mkdir()
    rows = [f"{sentence(SST2)}\t{i % 2}" for i in range(800)]
    (root / "SST-2" / "train.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    out = root / "prepared"
    prepare_pretraining_data(
        PrepareSettings(
            "local",
            root,
            out,
            vocab_size=80,
            seq_length=32,
            max_predictions_per_seq=5,
            dupe_factor=1,
            heldout_fraction=0.3,
        ),
        progress=False,
        log=lambda _: None,
    )
    return root, out


def test_partition_documents_by_content():
    a, b, c = ["x y"], ["z"], ["x y", "z"]
    inside, outside = partition_documents([a, b, c, ["z"]], reference=[["z"], c])
    assert inside == [b, c, ["z"]] and outside == [a]


def test_examples_per_source_hold_only_that_source(prepared):
    root, out = prepared
    wiki_docs = load_pretraining_corpus("local", root, include_sst2=False).documents
    groups = heldout_examples_by_source(out, {"wikitext": wiki_docs}, rest="sst2", dupe_factor=3)
    assert set(groups) == {"wikitext", "sst2"}
    tokenizer = load_tokenizer(out / "tokenizer")
    own = {
        name: set(tokenizer.encode(" ".join(words) + " .")) | tokenizer.special_ids
        for name, words in (("wikitext", WIKI), ("sst2", SST2))
    }
    assert own["wikitext"] != own["sst2"]
    for name, arrays in groups.items():
        assert arrays["input_word_ids"].shape[1] == 32  # manifest's T
        assert arrays["masked_lm_ids"].shape[1] == 5  # manifest's P
        text = original_tokens(arrays)[arrays["input_mask"] == 1]
        assert set(np.unique(text)) <= own[name], name  # both segments: this source only
        stats = example_statistics(arrays, tokenizer)
        assert 0.3 < stats["random_next"] / stats["examples"] < 0.7
    held_wiki = len(
        partition_documents(load_pretraining_corpus("local", root).documents, wiki_docs)[0]
    )
    assert held_wiki == 24


def test_missing_prepared_dir_is_a_clear_error(tmp_path):
    with pytest.raises(Exception, match="heldout.txt does not exist"):
        heldout_examples_by_source(tmp_path, {})


def test_example_table_marks_every_target(prepared):
    _, out = prepared
    tokenizer = load_tokenizer(out / "tokenizer")
    arrays = read_tfrecord(out / "examples" / "train.tfrecord", 32, 5)
    roles = {"[MASK]": 0, "random": 0, "kept": 0}
    for i in range(len(arrays["next_sentence_labels"])):
        table = example_table(arrays, i, tokenizer)
        assert len(table) == arrays["input_mask"][i].sum()
        assert table.input.iloc[0] == "[CLS]" and table.input.iloc[-1] == "[SEP]"
        assert (table.segment == "B").sum() == arrays["input_type_ids"][i].sum()
        marked = table[table.role != ""]
        assert sorted(marked.position) == sorted(
            arrays["masked_lm_positions"][i][arrays["masked_lm_weights"][i] > 0]
        )
        assert (marked.input[marked.role == "[MASK]"] == "[MASK]").all()
        assert (table.input != table.original).sum() == (
            table.role.isin(["[MASK]", "random"])
        ).sum()
        for role, count in table.role.value_counts().items():
            if role:
                roles[role] += count
    stats = example_statistics(arrays, tokenizer)
    assert roles == {
        "[MASK]": stats["replaced_by_mask"],
        "random": stats["replaced_by_random"],
        "kept": stats["kept"],
    }
    with pytest.raises(IndexError):
        example_table(arrays, len(arrays["next_sentence_labels"]), tokenizer)
