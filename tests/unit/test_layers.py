"""The package layering, read from the source: the durable-run core imports no kind of run, and no two
kinds import each other (every import counts, TYPE_CHECKING and function-local ones too)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import verbatim

ROOT = Path(verbatim.__file__).parent


def _package_imports() -> dict[str, set[str]]:
    """Subpackage of verbatim → the other subpackages its modules import."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        own = parts[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                bits = name.split(".")
                if bits[0] == "verbatim" and len(bits) > 1 and bits[1] != own:
                    edges[own].add(bits[1])
    return edges


def test_the_durable_core_imports_no_kind_of_run() -> None:
    edges = _package_imports()
    assert edges["durable"] & {"pipeline", "notes", "api", "web", "reliability"} == set(), edges["durable"]


def test_the_capture_run_and_the_note_run_do_not_import_each_other() -> None:
    edges = _package_imports()
    assert not ("notes" in edges["pipeline"] and "pipeline" in edges["notes"]), (
        sorted(edges["pipeline"]), sorted(edges["notes"]))
    assert "pipeline" not in edges["notes"]
