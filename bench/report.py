"""Printing a benchmark's figures as an aligned table and keeping them as JSON, for both harnesses."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def report(title: str, rows: Sequence[tuple[str, str]], *, results: dict[str, Any], json_path: Path) -> None:
    width = max(len(name) for name, _ in rows)
    print(title)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")
    json_path.write_text(json.dumps(results, indent=2))
    print(f"figures written to {json_path}")
