"""`python -m mbert_lib presets` lists every named configuration."""

import json

import pytest

from mbert_lib.cli import main
from mbert_lib.config import PRESETS, MobileBertConfig


def test_presets_table_lists_every_preset_with_its_shape(capsys):
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert set(rows) == set(PRESETS)
    for name, config in PRESETS.items():
        L, H, h, E, N, F = map(int, rows[name][1:7])
        assert (L, H, h, E, N, F) == (
            config.num_hidden_layers,
            config.hidden_size,
            config.attention_width,
            config.embedding_size,
            config.num_attention_heads,
            config.num_feedforward_networks,
        )
        assert rows[name][7:] == [config.normalization_type, config.hidden_act]


def test_presets_json_loads_back_into_the_same_configs(capsys):
    assert main(["presets", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {name: MobileBertConfig.from_dict(v) for name, v in printed.items()} == PRESETS


def test_unknown_command_exits_with_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["no_such_command"])
    assert info.value.code == 2
    assert "no_such_command" in capsys.readouterr().err
