"""What the plain bundle costs: the laptop bundle's files packed under other xz settings.

    python experiments/bundle_formats.py [--bundle bundles/laptop.tar.xz]
        [--out results/bundle_formats.json]

The bundle (mbert_lib/pipeline/bundle.py) is a plain tar in xz: its files unpack as the
run wrote them. Until format 3 its weight files were byte-shuffled (byte k of every
float32 together), which `tar` could list but not unpack into usable checkpoints. This
script reads the committed bundle's files and packs the same tar (same members, same
order) again under each setting, so the sizes compare the formats on identical content:

    plain, xz -9e                      the default literal contexts (lc=3, lp=0, pb=0)
    plain, xz -9e lc=0 lp=2 pb=2       contexts for 4-byte words
    plain, xz -9e lc=2 lp=2 pb=2       the bundle's setting
    plain, delta(4) + xz -9e lc=0 lp=2 pb=2
    shuffled, xz -9e                   format 2: weight files byte-shuffled

Each packing is deterministic, so one run each; the JSON holds the bytes, the ratio to
the committed bundle, the seconds and the hardware, and where the formats part: the bytes
the PKT student's PD snapshot adds after its last layer-wise one, in each layout.
"""

import argparse
import io
import json
import lzma
import tarfile
import time
from pathlib import Path

import numpy as np

from mbert_lib.hardware import cpu_info
from mbert_lib.pipeline.bundle import DEFAULT_BUNDLE

WEIGHTS_MARK = ".data-"  # tf.train checkpoint shards: what format 2 shuffled
PD_PAIR = (
    "pkt/stages/03_layer_3/checkpoints/ckpt-75.data-00000-of-00001",
    "pkt/stages/04_pd/checkpoints/ckpt-300.data-00000-of-00001",
)


def shuffled(data: bytes, width: int = 4) -> bytes:
    """Byte k of every `width`-byte word, k = 0..width-1, one after the other."""
    padded = data + b"\0" * (-len(data) % width)
    return np.frombuffer(padded, np.uint8).reshape(-1, width).T.tobytes()


def read_members(bundle: Path) -> list[tuple[str, bytes]]:
    with lzma.open(bundle) as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
        return [(m.name, tar.extractfile(m).read()) for m in tar if m.isfile()]


def tar_bytes(members: list[tuple[str, bytes]], shuffle: bool) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            data = shuffled(data) if shuffle and WEIGHTS_MARK in name else data
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def lzma2(size: int, **contexts) -> dict:
    return {
        "id": lzma.FILTER_LZMA2,
        "preset": 9 | lzma.PRESET_EXTREME,
        "dict_size": min(size + (1 << 20), 1 << 30),
        **contexts,
    }


def settings(size: int) -> dict[str, tuple[str, bool, list[dict]]]:
    """{key: (what it is, shuffled, xz filter chain)}."""
    words = {"lp": 2, "pb": 2}
    return {
        "plain_default": ("plain, xz -9e", False, [lzma2(size)]),
        "plain_lc0": ("plain, xz -9e lc=0 lp=2 pb=2", False, [lzma2(size, lc=0, **words)]),
        "plain_lc2": (
            "plain, xz -9e lc=2 lp=2 pb=2 (format 3, the bundle's)",
            False,
            [lzma2(size, lc=2, **words)],
        ),
        "plain_delta": (
            "plain, delta(4) + xz -9e lc=0 lp=2 pb=2",
            False,
            [{"id": lzma.FILTER_DELTA, "dist": 4}, lzma2(size, lc=0, **words)],
        ),
        "shuffled": ("weight files byte-shuffled, xz -9e (format 2)", True, [lzma2(size)]),
    }


def pd_increment(files: dict[str, bytes]) -> dict:
    """Bytes the PKT student's PD snapshot adds after its last layer-wise snapshot, plain
    (the bundle's setting) and shuffled (format 2): PD trains every weight, so this is
    where the two formats part."""
    before, after = (files[name] for name in PD_PAIR)
    out = {}
    for key in ("plain_lc2", "shuffled"):
        _, shuffle, filters = settings(len(before) + len(after))[key]
        prepare = shuffled if shuffle else bytes

        def packed(*parts, filters=filters, prepare=prepare):
            data = b"".join(prepare(p) for p in parts)
            return len(lzma.compress(data, format=lzma.FORMAT_XZ, filters=filters))

        out[key] = {
            "alone": packed(after),
            "after_layer_stage": packed(before, after) - packed(before),
        }
    return {"files": list(PD_PAIR), **out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default=str(DEFAULT_BUNDLE))
    parser.add_argument("--out", default="results/bundle_formats.json")
    args = parser.parse_args()
    bundle = Path(args.bundle)
    members = read_members(bundle)
    committed = bundle.stat().st_size
    rows = {}
    for key, (label, shuffle, filters) in settings(sum(len(d) for _, d in members)).items():
        start = time.perf_counter()
        packed = lzma.compress(tar_bytes(members, shuffle), format=lzma.FORMAT_XZ, filters=filters)
        rows[key] = {
            "what": label,
            "bytes": len(packed),
            "vs_committed": round(len(packed) / committed, 4),
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(f"{label}: {len(packed) / 1e6:.2f} MB", flush=True)
    record = {
        "what": "the committed laptop bundle's files packed again under each xz setting",
        "pd_snapshot_increment": pd_increment(dict(members)),
        "command": "python experiments/bundle_formats.py",
        "bundle": {"file": bundle.name, "bytes": committed, "files": len(members)},
        "unpacked_bytes": sum(len(d) for _, d in members),
        "settings": rows,
        "hardware": cpu_info(),
    }
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
