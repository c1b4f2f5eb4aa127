"""mlxcel's own result files into history, read by the sweep parsers (real-format samples)."""

from pathlib import Path

import pytest

from jobs.errors import UserError
from jobs.trends.imports import Imported, imported_points
from runner.trends.imports import import_file, read_import, stored_imports
from workers.shared.stores.local import LocalStore

SAMPLES = Path(__file__).parents[1] / "samples"
CSV_OK = SAMPLES / "pylm_m3ultra_2026-11-30_measure_single_qwen3-30b-a3b-4bit.csv"
CSV_FAILED = SAMPLES / "pylm_m3ultra_2026-11-30_measure_single_inkling-small-mlx-4bit.csv"


def test_a_bench_mlxlm_row_is_one_run_on_its_hardware() -> None:
    item = read_import(CSV_OK, None, format="bench-mlxlm-csv", commit="abc", arm="mlx-lm")
    points, problems = imported_points(item)
    assert problems == []
    decode = next(p for p in points if p.metric == "decode_tps")
    assert (decode.testbed, decode.model, decode.n, decode.mean) == (
        "m3ultra", "qwen3-30b-a3b-4bit", 1, 84.17)


def test_a_failed_row_is_named_not_imported() -> None:
    item = read_import(CSV_FAILED, None, format="bench-mlxlm-csv", commit="abc", arm="b")
    points, problems = imported_points(item)
    assert points == []
    assert "line 2" in problems[0] and "FAIL:bench" in problems[0]


def test_a_bench_decode_output_needs_its_labels_and_reads_both_streams() -> None:
    out, err = SAMPLES / "bench_decode_metal.stdout", SAMPLES / "bench_decode_metal.stderr"
    unlabelled = read_import(out, err, format="bench-decode", commit="abc", arm="mlxcel")
    assert "--testbed and --model" in imported_points(unlabelled)[1][0]
    item = unlabelled.model_copy(update={"testbed": "m3ultra", "model": "qwen3"})
    points, _ = imported_points(item)
    assert {p.metric for p in points} == {"decode_tps", "prefill_tps"}


def test_an_import_is_kept_in_the_store_and_read_back(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    item = read_import(CSV_OK, None, format="bench-mlxlm-csv", commit="abc", arm="mlx-lm",
                       repo="/src/mlxcel")
    import_file(store, item)
    import_file(store, item)  # the same file twice is one import
    points, problems, repos = stored_imports(store)
    assert (len(points), problems, repos) == (2, [], {"/src/mlxcel"})


def test_a_file_with_no_usable_row_is_refused_in_a_sentence(tmp_path: Path) -> None:
    item = Imported(format="bench-mlxlm-csv", file="x.csv", text="a,b\n1,2\n", commit="c",
                    arm="b")
    with pytest.raises(UserError, match="not a bench_mlxlm.py CSV"):
        import_file(LocalStore(tmp_path), item)
