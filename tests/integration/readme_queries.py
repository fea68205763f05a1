"""The code blocks of a section of models/README.md, run as written: each Python block's last
expression is its result (a pyarrow Table, a pandas DataFrame or a list of rows)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "models" / "README.md"


def section(heading: str) -> str:
    """The README's text from ``## <heading>`` to the next ``## `` heading."""
    text = README.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def run_python_blocks(text: str) -> list[tuple[str, int]]:
    """Every ```python block of ``text``, run in a fresh scope in the working directory:
    [(its last line, rows of its result)]."""
    results = []
    for code in re.findall(r"```python\n(.*?)```", text, re.S):
        *body, last = ast.parse(code).body
        scope: dict = {}
        exec(compile(ast.Module(body=body, type_ignores=[]), "README", "exec"), scope)
        value = eval(compile(ast.Expression(last.value), "README", "eval"), scope)
        results.append((code.strip().splitlines()[-1], getattr(value, "num_rows", None) or len(value)))
    return results
