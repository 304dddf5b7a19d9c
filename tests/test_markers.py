"""The markers pyproject.toml declares say what the suite does: a description naming a command-line
option (``--runslow`` once) that no conftest adds promises a behaviour nobody gets."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_marker_descriptions_name_only_options_pytest_has(pytestconfig):
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert markers
    for marker in markers:
        for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", marker):
            try:
                pytestconfig.getoption(option)
            except ValueError:
                raise AssertionError(f"marker {marker!r} names {option}, which no conftest or plugin adds") from None
