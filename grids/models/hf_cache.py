"""A Hugging Face model id and its ``config.json`` in the local hub cache (nothing is downloaded)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from grids.errors import SpecError

#: a Hugging Face model id: ORGANISATION/NAME (letters, digits, '-', '_', '.')
HF_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else
    ``~/.cache/huggingface/hub`` (huggingface_hub's own rule; nothing is downloaded here)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.join("~", ".cache")), "huggingface")
    return Path(home).expanduser() / "hub"


def hf_config_path(repo_id: str, cache: Path | None = None) -> Path:
    """The ``config.json`` of a Hugging Face model in the local hub cache: the snapshot that
    ``refs/main`` names, else the newest snapshot that has one. One SpecError names the exact
    path looked for and how to fetch it."""
    root = (cache or hf_cache_dir()) / f"models--{repo_id.replace('/', '--')}"
    snaps = root / "snapshots"
    ref = root / "refs" / "main"
    if ref.is_file():
        main = snaps / ref.read_text(encoding="utf-8").strip() / "config.json"
        if main.is_file():
            return main
    found = sorted(snaps.glob("*/config.json"), key=lambda p: p.stat().st_mtime)
    if found:
        return found[-1]
    raise SpecError(f"model {repo_id!r} is neither a catalog id nor in the local Hugging Face "
                    f"cache: no {snaps}/*/config.json. Fetch its config (huggingface-cli "
                    f"download {repo_id} config.json, or from Python hf_hub_download("
                    f"{repo_id!r}, 'config.json')), or give the path of a config.json")
