"""`bench distill --anchor_python`: parsing the anchor's records, per-round ratios, errors.

Nothing here needs tf-models or times anything: the anchor is replaced by tiny
scripts run with this interpreter, or by a function returning known records.
"""

import json
import statistics
import sys

import numpy as np
import pytest

from mbert_lib.bench import anchor
from mbert_lib.bench.anchor import AnchorError, compare_rounds, parse_anchor_records

VARIANTS = ("layer_wise_first", "layer_wise_last", "pd")
PROBLEM = {
    "seq_length": 16,
    "batch_size": 4,
    "max_predictions_per_seq": 3,
    "teacher_encoder_params": 1000,
    "student_encoder_params": 100,
}


def record(variant, tps, **changes):
    return {
        "variant": variant,
        "median_step_ms": 10.0,
        "tokens_per_second": tps,
        "repeats": 10,
        "tf_models_version": "2.20.0",
        "tensorflow_version": "2.20.0",
        **PROBLEM,
        **changes,
    }


def rounds(tps_rows):
    """[[tps per variant] per round] -> [{variant: record}] per round."""
    return [{v: record(v, t) for v, t in zip(VARIANTS, row)} for row in tps_rows]


def test_parse_anchor_records_by_variant():
    text = json.dumps([record(v, 1000.0 * (i + 1)) for i, v in enumerate(VARIANTS)])
    parsed = parse_anchor_records(text)
    assert list(parsed) == list(VARIANTS)
    assert parsed["pd"]["tokens_per_second"] == 3000.0


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json", "not JSON"),
        ("{}", "non-empty JSON list"),
        ("[]", "non-empty JSON list"),
        ("[3]", "record 0 is a int"),
        (
            json.dumps([{k: v for k, v in record("pd", 1.0).items() if k != "tokens_per_second"}]),
            "lacks field(s) ['tokens_per_second']",
        ),
        (json.dumps([record("pd", 1.0), record("pd", 2.0)]), "'pd' appears twice"),
        (json.dumps([record("pd", 0.0)]), "positive number"),
        (json.dumps([record("pd", True)]), "positive number"),
    ],
)
def test_parse_anchor_records_names_what_is_wrong(text, message):
    with pytest.raises(AnchorError, match="my.json") as e:
        parse_anchor_records(text, source="my.json")
    assert message in str(e.value)


def test_compare_rounds_ratio_per_round_and_median_against_numpy():
    rng = np.random.default_rng(0)
    ours_tps = rng.uniform(1e4, 1e5, size=(5, 3))
    anchor_tps = rng.uniform(1e4, 1e5, size=(5, 3))
    out = compare_rounds(rounds(ours_tps.tolist()), rounds(anchor_tps.tolist()))
    assert [c["variant"] for c in out] == list(VARIANTS)
    for j, c in enumerate(out):
        ratios = ours_tps[:, j] / anchor_tps[:, j]
        np.testing.assert_allclose(c["ratio_per_round"], ratios)
        assert c["median_ratio"] == pytest.approx(np.median(ratios))
        assert c["ours_median_tokens_per_second"] == pytest.approx(np.median(ours_tps[:, j]))
        assert c["anchor_median_tokens_per_second"] == pytest.approx(np.median(anchor_tps[:, j]))
        assert c["ours_tokens_per_second"] == ours_tps[:, j].tolist() and c["rounds"] == 5


def test_compare_rounds_median_of_ratios_not_ratio_of_medians():
    ours, theirs = [100.0, 200.0, 300.0], [100.0, 50.0, 400.0]  # ratios 1, 4, 0.75
    out = compare_rounds(rounds([[t] * 3 for t in ours]), rounds([[t] * 3 for t in theirs]))
    assert out[0]["median_ratio"] == pytest.approx(1.0)
    assert statistics.median(ours) / statistics.median(theirs) == pytest.approx(2.0)


def test_compare_rounds_refuses_what_cannot_be_compared():
    with pytest.raises(AnchorError, match="same number"):
        compare_rounds(rounds([[1, 2, 3]] * 2), rounds([[1, 2, 3]]))
    with pytest.raises(AnchorError, match="'pd' missing from the anchor"):
        compare_rounds(rounds([[1, 2, 3]]), [{v: record(v, 1.0) for v in VARIANTS[:2]}])
    other = [{v: record(v, 1.0, student_encoder_params=99) for v in VARIANTS}]
    with pytest.raises(AnchorError, match="student_encoder_params differs"):
        compare_rounds(rounds([[1, 2, 3]]), other)


def test_check_anchor_names_the_missing_python_and_script(tmp_path):
    with pytest.raises(AnchorError, match="--anchor_python .*nope.*no executable Python"):
        anchor.check_anchor(tmp_path / "nope")
    not_executable = tmp_path / "python"
    not_executable.write_text("")
    with pytest.raises(AnchorError, match="no executable Python"):
        anchor.check_anchor(not_executable)
    with pytest.raises(AnchorError, match="anchor script .*missing.py not found"):
        anchor.check_anchor(sys.executable, tmp_path / "missing.py")


def fake_anchor(tmp_path, body):
    script = tmp_path / "fake_anchor.py"
    script.write_text(
        "import argparse, json, sys\n"
        "p = argparse.ArgumentParser()\n"
        "for f in ('--config', '--repeats', '--warmup', '--json'): p.add_argument(f)\n"
        "a = p.parse_args()\n" + body
    )
    return script


def test_run_anchor_passes_config_and_reads_records(tmp_path):
    script = fake_anchor(
        tmp_path,
        (
            "c = json.load(open(a.config))\n"
            f"r = {record('pd', 1.0)!r}\n"
            "r.update(batch_size=c['batch_size'], repeats=int(a.repeats), tokens_per_second=7.0)\n"
            "json.dump([r], open(a.json, 'w'))\n"
        ),
    )
    out = anchor.run_anchor(sys.executable, {"batch_size": 5}, repeats=11, warmup=1, script=script)
    assert out["pd"]["batch_size"] == 5 and out["pd"]["repeats"] == 11
    assert out["pd"]["tokens_per_second"] == 7.0


def test_run_anchor_failure_shows_the_stderr_tail(tmp_path):
    script = fake_anchor(
        tmp_path,
        "print('\\n'.join(f'line {i}' for i in range(100)), file=sys.stderr)\nsys.exit(3)\n",
    )
    with pytest.raises(AnchorError, match="exit status 3") as e:
        anchor.run_anchor(sys.executable, {}, repeats=1, warmup=0, script=script)
    assert "line 99" in str(e.value) and "line 69" not in str(e.value)
    silent = fake_anchor(tmp_path, "")
    with pytest.raises(AnchorError, match="exit status 0"):
        anchor.run_anchor(sys.executable, {}, repeats=1, warmup=0, script=silent)


def test_bench_cli_stops_before_building_when_the_anchor_python_is_missing(tmp_path, capsys):
    from mbert_lib.cli import main

    assert main(["bench", "distill", "--anchor_python", str(tmp_path / "nope")]) == 2
    assert "--anchor_python" in capsys.readouterr().err
    assert main(["bench", "distill", "--rounds", "2"]) == 2
    assert "--rounds needs --anchor_python" in capsys.readouterr().err
