"""What a latency number was measured on: CPU model, cores, SIMD extensions, caches, load.

Latency depends on the machine more than on anything else: say which one.
Linux only in detail (/proc/cpuinfo, /sys); elsewhere the model and core count.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

# SIMD extensions that decide which XNNPACK kernels run: fp32 FMA, AVX-512, and the
# int8 dot-product (VNNI) and bf16 instructions quantized / half-precision kernels use.
SIMD_FLAGS = (
    "fma",
    "avx2",
    "avx512f",
    "avx512_vnni",
    "avx_vnni",
    "avx512_bf16",
    "amx_bf16",
    "amx_int8",
    "asimddp",
    "fphp",
    "i8mm",
    "bf16",
)
# Instructions that compute in bfloat16 natively (x86: AVX512-BF16, AMX; Arm: BF16).
# Without one, TensorFlow emulates bfloat16 and mixed precision only slows training down.
BFLOAT16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")


def _cpuinfo() -> dict[str, str]:
    path = Path("/proc/cpuinfo")
    info: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    return info


def _caches() -> dict[str, str]:
    """{"L1d": "48K", "L2": "1024K", "L3": "32768K"} of cpu0, where /sys lists them."""
    out = {}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind != "Instruction":
            out[f"L{level}" + ("d" if kind == "Data" else "")] = size
    return out


def cpu_info() -> dict:
    """model, machine, logical_cpus, simd (the SIMD_FLAGS present), caches, load_1min."""
    info = _cpuinfo()
    flags = set((info.get("flags") or info.get("Features") or "").split())
    return {
        "model": info.get("model name") or platform.processor() or "unknown",
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "simd": [f for f in SIMD_FLAGS if f in flags],
        "caches": _caches(),
        "load_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }


def describe(info: dict | None = None) -> str:
    """One line, e.g. "AMD EPYC, x86_64, 2 logical CPUs, SIMD fma avx2 ..., L2 1024K, L3 32768K"."""
    info = info or cpu_info()
    caches = ", ".join(f"{k} {v}" for k, v in info["caches"].items())
    return (
        f"{info['model']}, {info['machine']}, {info['logical_cpus']} logical CPUs, SIMD "
        f"{' '.join(info['simd']) or 'none listed'}" + (f", {caches}" if caches else "")
    )


def native_bfloat16(info: dict | None = None) -> bool:
    """True if the CPU lists an instruction set that computes in bfloat16 natively."""
    info = info or cpu_info()
    return any(flag in info["simd"] for flag in BFLOAT16_FLAGS)
