"""``dra-migrate convert`` streams (issue 25): documents are read, converted and written one at a
time, so its memory is bounded by the largest document, not by the input."""

from __future__ import annotations

import gc
import io
import tracemalloc
import warnings
from pathlib import Path

import yaml

from dra_bridge.migrate.cli import main
from dra_bridge.migrate.manifests import Sources, read_sources

EXAMPLES = Path(__file__).parents[1] / "data" / "examples"


class _Sink(io.StringIO):
    """Standard output that keeps only how much was written."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def write(self, text: str) -> int:
        self.written += len(text)
        return len(text)


def _pods(path: Path, count: int) -> None:
    pod = yaml.safe_load((EXAMPLES / "01-pod-limits-only-toleration.yaml").read_text())
    with path.open("w") as out:
        for i in range(count):
            pod["metadata"]["name"] = f"gpu-pod-{i}"
            out.write("---\n" + yaml.safe_dump(pod))


def _peak(path: Path) -> tuple[int, int, int]:
    """Peak traced memory of a convert of ``path``, and the characters written to stdout and stderr."""
    sink, err = _Sink(), _Sink()
    tracemalloc.start()
    try:
        code = main(["convert", "-f", str(path)], stdout=sink, stderr=err)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0
    return peak, sink.written, err.written


def test_convert_memory_does_not_grow_with_the_number_of_documents(tmp_path: Path) -> None:
    small, large = tmp_path / "small.yaml", tmp_path / "large.yaml"
    _pods(small, 100)
    _pods(large, 800)
    small_peak, small_out, small_err = _peak(small)
    large_peak, large_out, large_err = _peak(large)
    assert large_out > 7 * small_out and large_err > 7 * small_err  # every pod and finding was written
    assert large_peak < 1.5 * small_peak, f"peak {small_peak} B for 100 pods, {large_peak} B for 800"


class _Counted(io.BytesIO):
    """Bytes that say how many were read so far."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, size: int | None = -1) -> bytes:
        out = super().read(size)
        self.taken += len(out)
        return out


def test_documents_are_read_one_at_a_time() -> None:
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {k: '%s'}\n"
    data = "".join("---\n" + doc % (i, "x" * 1000) for i in range(5000)).encode()
    raw = _Counted(data)
    documents = read_sources(["-"], io.TextIOWrapper(raw, encoding="utf-8"))
    first = next(documents)
    assert first.obj["metadata"]["name"] == "c0"
    assert raw.taken < len(data) // 2, f"{raw.taken} of {len(data)} bytes read for the first document"
    assert sum(1 for _ in documents) == 4999


def test_the_scan_for_a_kind_closes_every_file_it_opened_found_or_not(tmp_path: Path) -> None:
    """``Sources.mention`` (convert's pre-pass for ResourceQuotas) closes the file in which it
    finds the word too: no ResourceWarning, no descriptor left to the collector."""
    (tmp_path / "a.yaml").write_text("kind: ResourceQuota\n")
    (tmp_path / "b.yaml").write_text("kind: Pod\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with Sources([str(tmp_path)]) as sources:
            assert sources.mention("ResourceQuota")
            assert not sources.mention("Deployment")
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
