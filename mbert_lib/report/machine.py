"""The machine a report was made on: CPU model, cores, memory, library versions, load."""

from __future__ import annotations

import os
import platform
from importlib import metadata

from mbert_lib.step_records import load_average

PACKAGES = ("tensorflow", "tf-keras", "ai-edge-litert", "numpy")


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else `platform.processor()`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def memory_gib() -> float | None:
    """Physical memory in GiB, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (AttributeError, ValueError, OSError):
        return None


def versions(packages=PACKAGES) -> dict[str, str]:
    """Installed versions of `packages` ("not installed" where absent), and Python's."""
    out = {"python": platform.python_version()}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def machine_info() -> dict:
    """{cpu, cores, memory_gib, os, versions, load_average} of this machine, now."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "versions": versions(),
        "load_average": load_average(),
    }
