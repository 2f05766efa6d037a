"""The notebooks run from top to bottom (so they never rot)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_notebook_executes(path, monkeypatch):
    if path.name == "opponents.ipynb":  # trains a policy and plots: the [train] extras
        pytest.importorskip("torch")
        pytest.importorskip("matplotlib")
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    if path.name == "quickstart.ipynb":
        assert "final scores per team" in text
    if path.name == "opponents.ipynb":  # played the pretrained policy, trained, plotted the curve
        assert "opponent: NetworkPolicy" in text and "final scores (us, them)" in text
        assert "learning curve: 12 points" in text and "against random play: mean reward" in text
