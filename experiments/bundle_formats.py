"""What the plain bundle costs: the laptop bundle's files packed under other settings.

    python experiments/bundle_formats.py [--bundle bundles/laptop.tar.xz]
        [--out results/bundle_formats.json]

The bundle (mbert_lib/pipeline/bundle.py) is a plain tar in xz: its files unpack as the
run wrote them. Until format 3 its weight files were byte-shuffled (byte k of every
float32 together), which `tar` could list but not unpack into usable checkpoints. This
script reads the committed bundle's files and packs the same tar (same members, same
order) again under each setting, so the sizes compare the formats on identical content.
The settings are the search for a plain archive as small as format 2:

    plain, xz -9e                      the default literal contexts (lc=3, lp=0, pb=0)
    plain, xz -9e lc=L lp=P pb=B       other contexts for 4-byte words (the bundle: 2 2 2)
    plain, xz -9e ... nice_len=128     a shorter match search
    plain, xz -9e ... mf=hc4           the hash-chain match finder
    plain, delta(4) + xz -9e lc=0 lp=2 pb=2
    plain, bzip2 -9                    what `tar -j` writes
    plain, zstd -19 --long=27          what `tar --zstd` writes (needs the zstd program)
    shuffled, xz -9e                   format 2: weight files byte-shuffled

Each packing is deterministic, so one run each; the JSON holds the bytes, the ratio to
the committed bundle, the seconds and the hardware, and where the formats part: the bytes
the PKT student's PD snapshot adds after its last layer-wise one, in each layout.
"""

import argparse
import bz2
import io
import json
import lzma
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mbert_lib.hardware import cpu_info
from mbert_lib.pipeline.bundle import DEFAULT_BUNDLE

WEIGHTS_MARK = ".data-"  # tf.train checkpoint shards: what format 2 shuffled
PD_PAIR = (
    "pkt/stages/03_layer_3/checkpoints/ckpt-75.data-00000-of-00001",
    "pkt/stages/04_pd/checkpoints/ckpt-300.data-00000-of-00001",
)
ZSTD_LEVEL, ZSTD_WINDOW_LOG = 19, 27  # a 128 MiB window holds the whole tar


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


def lzma2(size: int, **options) -> dict:
    return {
        "id": lzma.FILTER_LZMA2,
        "preset": 9 | lzma.PRESET_EXTREME,
        "dict_size": min(size + (1 << 20), 1 << 30),
        **options,
    }


def xz(filters: list[dict]) -> Callable[[bytes], int]:
    return lambda data: len(lzma.compress(data, format=lzma.FORMAT_XZ, filters=filters))


def bzip2(data: bytes) -> int:
    return len(bz2.compress(data, 9))


def zstd(data: bytes) -> int:
    command = ["zstd", f"-{ZSTD_LEVEL}", f"--long={ZSTD_WINDOW_LOG}", "-q", "-c"]
    return len(subprocess.run(command, input=data, capture_output=True, check=True).stdout)


def plain_xz(size: int, lc: int, lp: int, pb: int, **search) -> tuple:
    """A settings row: the plain tar in xz -9e with these literal and position contexts
    (and, in `search`, other LZMA2 match-finder options)."""
    shown = {"lc": lc, "lp": lp, "pb": pb, **search}
    if "mf" in shown:
        shown["mf"] = {lzma.MF_HC4: "hc4", lzma.MF_BT4: "bt4"}[shown["mf"]]
    words = " ".join(f"{k}={v}" for k, v in shown.items())
    return f"plain, xz -9e {words}", False, xz([lzma2(size, lc=lc, lp=lp, pb=pb, **search)])


def settings(size: int) -> dict[str, tuple[str, bool, Callable[[bytes], int]]]:
    """{key: (what it is, shuffled, packed size of a tar's bytes)}."""
    bundle_label, _, bundle_pack = plain_xz(size, 2, 2, 2)
    delta = [{"id": lzma.FILTER_DELTA, "dist": 4}, lzma2(size, lc=0, lp=2, pb=2)]
    rows = {
        "plain_default": ("plain, xz -9e", False, xz([lzma2(size)])),
        "plain_lc0": plain_xz(size, 0, 2, 2),
        "plain_lc1": plain_xz(size, 1, 2, 2),
        "plain_lc2": (f"{bundle_label} (format 3, the bundle's)", False, bundle_pack),
        "plain_lc3_lp1": plain_xz(size, 3, 1, 2),
        "plain_lc4_lp0": plain_xz(size, 4, 0, 2),
        "plain_lc2_pb0": plain_xz(size, 2, 2, 0),
        "plain_lc2_nice128": plain_xz(size, 2, 2, 2, nice_len=128),
        "plain_lc2_hc4": plain_xz(size, 2, 2, 2, mf=lzma.MF_HC4),
        "plain_delta": ("plain, delta(4) + xz -9e lc=0 lp=2 pb=2", False, xz(delta)),
        "plain_bzip2": ("plain, bzip2 -9 (tar -j)", False, bzip2),
    }
    if shutil.which("zstd"):
        zstd_label = f"plain, zstd -{ZSTD_LEVEL} --long={ZSTD_WINDOW_LOG} (tar --zstd)"
        rows["plain_zstd"] = (zstd_label, False, zstd)
    rows["shuffled"] = ("weight files byte-shuffled, xz -9e (format 2)", True, xz([lzma2(size)]))
    return rows


def pd_increment(files: dict[str, bytes]) -> dict:
    """Bytes the PKT student's PD snapshot adds after its last layer-wise snapshot, plain
    (the bundle's setting) and shuffled (format 2): PD trains every weight, so this is
    where the two formats part. Also the fraction of float32 words whose byte k (k = 0..3,
    little-endian) the PD stage left unchanged."""
    before, after = (files[name] for name in PD_PAIR)
    out = {}
    for key in ("plain_lc2", "shuffled"):
        _, shuffle, pack = settings(len(before) + len(after))[key]
        prepare = shuffled if shuffle else bytes

        def packed(*parts, pack=pack, prepare=prepare):
            return pack(b"".join(prepare(p) for p in parts))

        out[key] = {
            "alone": packed(after),
            "after_layer_stage": packed(before, after) - packed(before),
        }
    words = min(len(before), len(after)) // 4 * 4
    same = np.frombuffer(before[:words], np.uint8) == np.frombuffer(after[:words], np.uint8)
    by_byte = same.reshape(-1, 4).mean(axis=0)  # little-endian: byte 3 is sign and exponent
    return {
        "files": list(PD_PAIR),
        "equal_fraction_by_byte": [round(float(f), 4) for f in by_byte],
        **out,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", default=str(DEFAULT_BUNDLE))
    parser.add_argument("--out", default="results/bundle_formats.json")
    args = parser.parse_args()
    bundle = Path(args.bundle)
    members = read_members(bundle)
    committed = bundle.stat().st_size
    rows = {}
    for key, (label, shuffle, pack) in settings(sum(len(d) for _, d in members)).items():
        start = time.perf_counter()
        size = pack(tar_bytes(members, shuffle))
        rows[key] = {
            "what": label,
            "bytes": size,
            "vs_committed": round(size / committed, 4),
            "seconds": round(time.perf_counter() - start, 1),
        }
        print(f"{label}: {size / 1e6:.2f} MB", flush=True)
    record = {
        "what": "the committed laptop bundle's files packed again under each setting",
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
