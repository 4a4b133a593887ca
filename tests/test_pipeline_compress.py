"""The compress step's settings and method names; the step itself runs in the smoke test
(tests/test_pipeline_smoke.py, `_compress`)."""

import pytest

from mbert_lib.pipeline.registry import get_recipe
from mbert_lib.pipeline.steps_compress import check_settings, method_name


def test_methods_are_named_as_the_issue_table_names_them():
    assert method_name(None, "fp32") == "fp32"
    assert method_name(None, "dynamic_int8") == "dynamic_int8"
    assert method_name(None, "int8") == "full_int8"
    assert method_name("prune_75", "fp32") == "prune_75"
    assert method_name("prune_90", "dynamic_int8") == "prune_90_dynamic_int8"
    assert method_name("ffn_units_50", "int8") == "ffn_units_50_full_int8"


@pytest.mark.parametrize("recipe", ["laptop", "smoke"])
def test_the_recipes_settings_are_accepted(recipe):
    check_settings(get_recipe(recipe)["compress"])


@pytest.mark.parametrize(
    "change, message",
    [
        ({"sparsities": [0.5, 1.0]}, r"compress.sparsities\[\] must be a number in \[0, 1\)"),
        ({"sparsities": [-0.1]}, r"compress.sparsities\[\] must be a number in \[0, 1\)"),
        ({"sensitivity": [0.9, 1]}, r"compress.sensitivity\[\] must be a number in \[0, 1\)"),
        ({"ffn_units": [0.5, 1.0]}, r"compress.ffn_units\[\] must be a fraction in \(0, 1\)"),
        ({"ffn_units": [0]}, r"compress.ffn_units\[\] must be a fraction in \(0, 1\)"),
        ({"pruned_qat": [0.75]}, r"compress.pruned_qat\[\] must be one of compress.sparsities"),
        ({"seeds": 1}, r"compress.seeds must be >= 2"),
        ({"teacher": "pkt"}, r"compress.teacher must be null or the name of a step other than"),
        ({"teacher": 3}, r"compress.teacher must be null or the name of a step other than"),
        ({"precisions": ["fp32", "int4"]}, r"compress.precisions must be a list of"),
        ({"precisions": ["int8"]}, r"compress.precisions must be a list holding fp32"),
        ({"pruned_precisions": ["float16"]}, r"compress.pruned_precisions must be a list of"),
    ],
)
def test_bad_settings_fail_naming_the_setting(change, message):
    settings = {**get_recipe("smoke")["compress"], **change}
    with pytest.raises(ValueError, match=message):
        check_settings(settings)
