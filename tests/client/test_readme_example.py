"""The README's Python-client example runs as written against a live server (only the URL and key swapped in)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.client.conftest import Served

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_client_example_runs(served: Served, capsys):
    section = README.read_text(encoding="utf-8").split("### Python client", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    code = code.replace('"http://127.0.0.1:8000"', repr(served.url)).replace('"ml_..."', repr(served.key("readme")))
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    # The top hit is the message or the typed memory distilled from it ("Pepper is the user's border collie.").
    assert "Pepper" in printed.splitlines()[0]
