"""The README's ten-line snippet runs as printed, and its attention-transfer loss is the
KL divergence NumPy computes from the same two attention maps."""

import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def _snippet() -> str:
    text = README.read_text()
    section = text[text.index("## The library in ten lines") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_snippet_is_ten_lines_and_its_at_loss_is_the_numpy_kl(capsys):
    code = _snippet()
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)
    assert "layer 0 FMT" in capsys.readouterr().out
    a_t = namespace["t"]["attention_scores"][0].numpy()  # [B, N, T, T]
    a_s = namespace["s"]["attention_scores"][0].numpy()
    kl = np.sum(a_t * (np.log(a_t) - np.log(a_s)), axis=-1)  # [B, N, T]
    np.testing.assert_allclose(float(namespace["at"]), kl.mean(), rtol=1e-4)
    assert float(namespace["fmt"]) > 0
