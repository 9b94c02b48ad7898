"""Shim: the seeds study is the package scripts/seeds; run ``python -m scripts.seeds``."""
import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
runpy.run_module("scripts.seeds", run_name="__main__")
