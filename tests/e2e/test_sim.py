"""End-to-end test of `herd sim` on the openb trace (skipped when absent)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERD = os.environ.get("HERD_BIN", str(REPO / "build/src/cli/herd"))
TRACES = Path(os.environ.get("HERD_TRACES", REPO.parent / "shared/traces/openb"))
NODES = TRACES / "openb_node_list_gpu_node.csv"
PODS = TRACES / "openb_pod_list_default.csv"


def need_trace():
    if not NODES.exists() or not PODS.exists():
        pytest.skip(f"openb trace not found in {TRACES} (set HERD_TRACES)")
    if not Path(HERD).exists():
        pytest.skip(f"herd binary not found at {HERD} (set HERD_BIN)")


def test_json_shape_and_published_bestfit(tmp_path):
    need_trace()
    curve = tmp_path / "curve.csv"
    out = subprocess.run([HERD, "sim", "--nodes", str(NODES), "--pods", str(PODS),
                          "--policy", "bestfit,herd", "--seeds", "42-43", "-json",
                          "--curve", str(curve)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["nodes"] == 1213 and doc["gpus"] == 6212
    assert [r["policy"] for r in doc["results"]] == ["bestfit", "herd"]
    for r in doc["results"]:
        assert r["seeds"] == 2
        assert set(r) == {"policy", "seeds", "alloc_100", "alloc_130", "frag_ratio",
                          "unalloc_gpus_100", "us_per_placement"}
        assert set(r["frag_ratio"]) == {"50", "70", "90"}
        assert 0 < r["alloc_100"]["mean"] <= 100
    bestfit, herd = doc["results"]
    assert abs(bestfit["alloc_100"]["mean"] - 92.86) < 1.0
    assert herd["alloc_100"]["mean"] > bestfit["alloc_100"]["mean"]
    lines = curve.read_text().splitlines()
    assert lines[0] == "arrived,bestfit,herd"
    assert len(lines) == 132


def test_usage_errors():
    for args in (["--policy", "nope"], ["--seeds", "9-1"], ["--tune", "x"], ["extra"]):
        out = subprocess.run([HERD, "sim", *args], capture_output=True, text=True)
        if not Path(HERD).exists():
            pytest.skip("herd binary not built")
        assert out.returncode == 2, args
        assert len(out.stderr.strip().splitlines()) == 1


def test_missing_file(tmp_path):
    if not Path(HERD).exists():
        pytest.skip("herd binary not built")
    out = subprocess.run([HERD, "sim", "--nodes", str(tmp_path / "none.csv"),
                          "--pods", str(tmp_path / "none.csv")], capture_output=True, text=True)
    assert out.returncode == 1
    assert "cannot read" in out.stderr


def test_text_bound_column():
    """The text table has a lower bound on unallocated GPUs per policy: on the
    default trace it is above the 148 GPUs the issue asked for (no policy can
    reach it) and below what herd leaves."""
    need_trace()
    out = subprocess.run([HERD, "sim", "--nodes", str(NODES), "--pods", str(PODS),
                          "--policy", "herd", "--seeds", "42"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    head, row = out.stdout.splitlines()[1:3]
    assert head.split()[-3:] == ["unalloc", "bound", "us/place"]
    unalloc, bound = (float(x) for x in row.split()[-3:-1])
    assert 148 < bound < unalloc
