r"""Creates masked-LM + next-sentence pre-training TFRecords (the original's flags and features).

  python create_pretraining_data.py --input_file=./sample_text.txt \
    --output_file=/tmp/tf_examples.tfrecord --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
    --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

Streams the corpus in chunks over --num_workers processes; memory does not grow with the corpus.
"""

import tensorflow as tf
from absl import app, flags

from official_bert.data.pretraining.data_writer import (
    PretrainingDataSettings,
    write_pretraining_examples,
)
from official_bert.data.text_corpus import expand_input_patterns
from official_bert.file_system import check_local_output_file

FLAGS = flags.FLAGS


def define_flags() -> None:
    """Defines the command's flags (once a process: absl keeps one set)."""
    # === The original flags ===
    flags.DEFINE_string("input_file", None, "Input text file(s): comma-separated paths or globs.")
    flags.DEFINE_string(
        "output_file", None, "Output TFRecord file(s), comma-separated; round-robin."
    )
    flags.DEFINE_string("vocab_file", None, "The vocab.txt the BERT model was trained on.")
    flags.DEFINE_bool("do_lower_case", True, "Lower-case the input (True for uncased models).")
    flags.DEFINE_bool(
        "preserve_unused_tokens",
        False,
        "If True, Wordpiece tokenization will not be applied to words in the vocab.",
    )
    flags.DEFINE_bool("do_whole_word_mask", False, "Mask whole words instead of single wordpieces.")
    flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
    flags.DEFINE_integer(
        "max_predictions_per_seq", 20, "Maximum masked-LM predictions per sequence."
    )
    flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
    flags.DEFINE_integer(
        "dupe_factor", 10, "Times to duplicate the input data (with different masks)."
    )
    flags.DEFINE_float("masked_lm_prob", 0.15, "Masked-LM probability.")
    flags.DEFINE_float(
        "short_seq_prob", 0.1, "Probability of creating sequences shorter than maximum."
    )
    # === Beyond the original ===
    flags.DEFINE_integer(
        "num_workers",
        None,
        "Processes building examples, this one included (default: all cores, fewer for a small "
        "corpus: a helper process spends seconds importing TensorFlow; the output does not depend "
        "on it).",
    )
    flags.DEFINE_integer(
        "num_output_shards", None, "Write --output_file as this many shards NAME-00000-of-0000N."
    )
    flags.DEFINE_integer(
        "documents_per_chunk",
        1000,
        "Documents per work unit (bounds memory); at least 4 with next-sentence pairs, whose "
        "random B comes from another document of the unit.",
    )
    flags.DEFINE_float(
        "chunk_megabytes", 0.5, "Close a work unit once it holds this much text (bounds memory)."
    )
    flags.DEFINE_integer("max_ngram_size", 1, "Mask spans of up to N whole words (n-gram masking).")
    flags.DEFINE_bool("no_nsp", False, "MLM-only instances: one segment, next_sentence_labels = 0.")
    flags.DEFINE_bool("gzip_compress", False, "Write GZIP-compressed TFRecords.")
    flags.DEFINE_bool(
        "use_v2_feature_names", False, "Name features input_word_ids / input_type_ids (TF2 style)."
    )
    # The original's 80/10/10; given all three, they must sum to 1.
    flags.DEFINE_float("mask_token_prob", 0.8, "Share of predictions replaced by [MASK].")
    flags.DEFINE_float("random_token_prob", 0.1, "Share of predictions replaced by a random token.")
    flags.DEFINE_float(
        "keep_token_prob",
        None,
        "Share of predictions left unchanged (default: what the others leave).",
    )
    flags.DEFINE_bool(
        "decide_per_word",
        False,
        "With whole-word masking, one [MASK]/random/keep draw per word (default True with "
        "--word_segmenter).",
    )
    flags.DEFINE_enum(
        "word_segmenter",
        "none",
        ["none", "jieba", "ref_file"],
        "Whole-word masking by words of CJK text too (implies --do_whole_word_mask): jieba (the "
        "[zh] extra) or --word_ref_file; none: the original's '##' words (docs/chinese.md).",
    )
    flags.DEFINE_string(
        "word_ref_file",
        None,
        "With --word_segmenter=ref_file: comma-separated reference files as Hugging Face's "
        "run_chinese_ref.py writes them, one JSON list per non-blank --input_file line, in order.",
    )
    flags.DEFINE_enum(
        "masking",
        "static",
        ["static", "dynamic"],
        "static: the original (masks drawn here, a new set per --dupe_factor pass). dynamic: "
        "records without masks (and with word starts for whole-word masking), masked afresh every "
        "epoch by run_pretraining.py's input pipeline (docs/create_pretraining_data.md).",
    )
    flags.DEFINE_enum(
        "on_decode_error",
        "fail",
        ["fail", "skip"],
        "Invalid UTF-8: fail naming the line, or skip it.",
    )
    flags.DEFINE_string(
        "beam_pipeline_options",
        "",
        "Run as an Apache Beam pipeline with these options, e.g. '--runner=DirectRunner "
        "--direct_num_workers=2 --direct_running_mode=multi_processing' (needs the [beam] extra; "
        "docs/beam.md). Writes --output_file-SSSSS-of-NNNNN (--num_output_shards, default 1) and "
        "_<name>.summary.json beside them. Empty: the local writer.",
    )
    flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])


def output_paths(output_file: str, num_output_shards: int | None) -> list[str]:
    paths = [p.strip() for p in output_file.split(",") if p.strip()]
    if num_output_shards:
        if len(paths) != 1:
            raise app.UsageError("--num_output_shards needs a single --output_file name")
        return [f"{paths[0]}-{i:05d}-of-{num_output_shards:05d}" for i in range(num_output_shards)]
    return paths


def main(_):
    if not tf.io.gfile.exists(FLAGS.vocab_file):  # gs:// too, as in the original
        raise FileNotFoundError(f"--vocab_file not found: {FLAGS.vocab_file}")
    for path in output_paths(FLAGS.output_file, FLAGS.num_output_shards):
        check_local_output_file(path, "output_file")
    settings = PretrainingDataSettings(
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        preserve_unused_tokens=FLAGS.preserve_unused_tokens,
        do_whole_word_mask=FLAGS.do_whole_word_mask,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed,
        dupe_factor=FLAGS.dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        max_ngram_size=FLAGS.max_ngram_size,
        next_sentence=not FLAGS.no_nsp,
        mask_token_prob=FLAGS.mask_token_prob,
        random_token_prob=FLAGS.random_token_prob,
        keep_token_prob=(
            FLAGS.keep_token_prob
            if FLAGS.keep_token_prob is not None
            else round(1.0 - FLAGS.mask_token_prob - FLAGS.random_token_prob, 12)
        ),
        # A segmenter's words decide [MASK]/random/keep once per word unless told otherwise.
        decide_per_word=(
            FLAGS.decide_per_word
            if FLAGS["decide_per_word"].present
            else FLAGS.word_segmenter != "none"
        ),
        use_v2_feature_names=FLAGS.use_v2_feature_names,
        documents_per_chunk=FLAGS.documents_per_chunk,
        chunk_bytes=int(FLAGS.chunk_megabytes * 1024 * 1024),
        word_segmenter=FLAGS.word_segmenter,
        word_ref_files=tuple(
            p.strip() for p in (FLAGS.word_ref_file or "").split(",") if p.strip()
        ),
        masking=FLAGS.masking,
    )
    if FLAGS.beam_pipeline_options:
        from official_bert.data.pretraining.beam_pipeline import (
            write_pretraining_examples_with_beam,
        )

        write_pretraining_examples_with_beam(
            expand_input_patterns(FLAGS.input_file),
            FLAGS.output_file,
            FLAGS.num_output_shards or 1,
            settings,
            pipeline_options=FLAGS.beam_pipeline_options,
            gzip_compress=FLAGS.gzip_compress,
            on_decode_error=FLAGS.on_decode_error,
        )
        return
    write_pretraining_examples(
        expand_input_patterns(FLAGS.input_file),
        output_paths(FLAGS.output_file, FLAGS.num_output_shards),
        settings,
        num_workers=FLAGS.num_workers,
        gzip_compress=FLAGS.gzip_compress,
        on_decode_error=FLAGS.on_decode_error,
    )
