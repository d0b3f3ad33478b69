"""The library page's examples run as written and print what the page says they print."""

import contextlib
import io
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_library_examples_run_and_their_commented_results_hold() -> None:
    page = (REPO / "docs" / "library.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.chdir(REPO), contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, "docs/library.md", "exec"), namespace)  # noqa: S102
    output = printed.getvalue()
    assert "8 writes" in output
    for claimed in re.findall(r"print\(key\)\s+# (.*)", page):
        assert claimed in output
