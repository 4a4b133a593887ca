"""Parameter counts: a closed form written from the architecture vs the built models.

The targets are the counts of the tf-models implementation (docs/reference.md):
MobileBERT encoder 24,581,888; MobileBERT_TINY 15,485,696; BERT_BASE 109,482,240
(109,492,992 with tf-models' default type_vocab_size = 16); IB-BERT_LARGE
294,205,184 without its pooler, 294,467,840 with it.

Each big preset is built once per session (module-scoped fixture), with zero
weights (a count needs no random values), then freed.
"""

import numpy as np
import pytest

from mbert_lib.config import PRESETS, get_preset
from mbert_lib.models import build_encoder, build_pretrainer, count_params
from tests.helpers import free_models, small_config, zero_initializers


def dense(n_in: int, n_out: int) -> int:
    return n_in * n_out + n_out


def norm(width: int) -> int:
    return 2 * width  # γ and β, NoNorm and LayerNorm alike


def closed_form(c) -> dict[str, int]:
    """Parameters per component, from paper Table 1's shapes."""
    V, E, H, I, F = (
        c.vocab_size,
        c.embedding_size,
        c.hidden_size,
        c.intermediate_size,
        c.num_feedforward_networks,
    )
    w = c.intra_bottleneck_size if c.use_bottleneck else H  # attention / FFN width
    embeddings = V * E + c.max_position_embeddings * H + c.type_vocab_size * H + norm(H)
    if c.trigram_input:
        embeddings += dense(3 * E, H)  # [e_{t+1}; e_t; e_{t-1}]
    elif E != H:
        embeddings += dense(E, H)
    block = 0
    if c.use_bottleneck:
        block += dense(H, w) + norm(w) + dense(w, H) + norm(H)  # input + output bottleneck
    if c.key_query_shared_bottleneck:
        block += dense(H, w) + norm(w)  # shared Q/K bottleneck
    qk_in = w if (c.use_bottleneck_attention or c.key_query_shared_bottleneck) else H
    v_in = w if c.use_bottleneck_attention else H
    block += 2 * dense(qk_in, w) + dense(v_in, w) + dense(w, w) + norm(w)  # Q, K, V, out
    block += F * (dense(w, I) + dense(I, w) + norm(w))  # stacked FFNs
    pooler = dense(H, H) if c.classifier_activation else 0
    mlm = dense(H, H) + norm(H) + V * (H - E) + V  # transform, W_extra, bias
    return {
        "embeddings": embeddings,
        "block": block,
        "pooler": pooler,
        "encoder": embeddings + c.num_hidden_layers * block + pooler,
        "heads": mlm + dense(H, 2),
    }


# name -> (config, expected encoder count, build the pretrainer too)
TARGETS = {
    "mobilebert": (get_preset("mobilebert"), 24_581_888, True),
    "mobilebert_tiny": (get_preset("mobilebert_tiny"), 15_485_696, False),
    "bert_base": (get_preset("bert_base"), 109_482_240, False),
    "bert_base_tv16": (get_preset("bert_base").replace(type_vocab_size=16), 109_492_992, False),
    "ibbert_large": (get_preset("ibbert_large"), 294_467_840, False),
}


def test_closed_form_gives_the_reference_counts():
    for name, (config, expected, _) in TARGETS.items():
        assert closed_form(config)["encoder"] == expected, name
    teacher = get_preset("ibbert_large")
    assert closed_form(teacher.replace(classifier_activation=False))["encoder"] == 294_205_184
    # NoNorm and LayerNorm have the same γ, β: OPT changes latency, not size (Table 7).
    assert (
        closed_form(get_preset("mobilebert_no_opt"))["encoder"]
        == closed_form(get_preset("mobilebert"))["encoder"]
    )


@pytest.fixture(
    scope="module",
    params=[
        "mobilebert",
        "mobilebert_tiny",
        "bert_base",
        "bert_base_tv16",
        pytest.param("ibbert_large", marks=pytest.mark.slow),
    ],
)
def built(request):
    config, expected, with_heads = TARGETS[request.param]
    with zero_initializers():
        model = build_pretrainer(config) if with_heads else build_encoder(config, seq_length=2)
    yield request.param, config, expected, model
    del model
    free_models()


def test_built_model_count_equals_closed_form(built):
    name, config, expected, model = built
    encoder = getattr(model, "encoder", model)
    form = closed_form(config)
    assert count_params(encoder.embedding) == form["embeddings"]
    assert all(count_params(b) == form["block"] for b in encoder.blocks)
    assert len(encoder.blocks) == config.num_hidden_layers
    pooler = count_params(encoder.pooler) if encoder.pooler is not None else 0
    assert pooler == form["pooler"]
    assert count_params(encoder) == form["encoder"] == expected
    if name == "ibbert_large":
        assert count_params(encoder) - pooler == 294_205_184
    if model is not encoder:
        assert count_params(model) - count_params(encoder) == form["heads"]
        assert tuple(model.masked_lm.extra_output_weights.shape) == (30522, 512 - 128)


def test_trainable_and_total_counts_agree(built):
    _, _, expected, model = built
    encoder = getattr(model, "encoder", model)
    trainable = int(sum(np.prod(w.shape) for w in encoder.trainable_weights))
    assert trainable == expected


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_closed_form_matches_every_preset_at_small_size(name):
    config = small_config(name)
    with zero_initializers():
        model = build_pretrainer(config)
    form = closed_form(config)
    assert count_params(model.encoder) == form["encoder"]
    assert count_params(model) - count_params(model.encoder) == form["heads"]
