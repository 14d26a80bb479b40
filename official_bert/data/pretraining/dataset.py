"""tf.data input of masked-LM + next-sentence pre-training TFRecords."""

from __future__ import annotations

import tensorflow as tf

from official_bert.data.pretraining.dynamic_masking import MaskingRecipe, mask_batch, record_draws
from official_bert.data.pretraining.features import (
    MASKING_IDS,
    MASKING_PROBS,
    ORIGINAL_FEATURE_NAMES,
    UNMASKED_FEATURE_NAMES,
    V2_RENAMES,
    WORD_STARTS,
    pretraining_feature_spec,
    unmasked_feature_spec,
)
from official_bert.data.record_batches import check_token_ids
from official_bert.data.record_files import (
    RecordFileError,
    check_record_files,
    compression_of,
    first_record,
    skip_files_without_records,
)
from official_bert.data.text_corpus import expand_input_patterns

# Model input names (what BertPretrainer takes), by original feature name.
_MODEL_NAMES = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
    "next_sentence_labels": "next_sentence_labels",
}


def inspect_pretraining_file(path: str) -> dict:
    """Feature naming, lengths, compression and masking of a pre-training TFRecord file, read
    from its first record: {"use_v2_feature_names", "max_seq_length", "max_predictions_per_seq",
    "compression_type", "masking"} ("static" or "dynamic"), and for dynamic records "recipe"
    (a MaskingRecipe) and "word_starts" (whether they carry them: whole-word masking)."""
    example = tf.train.Example.FromString(first_record(path))
    features = example.features.feature
    v2 = V2_RENAMES["input_ids"] in features
    ids_name = V2_RENAMES["input_ids"] if v2 else "input_ids"
    if MASKING_IDS in features:  # create_pretraining_data.py --masking=dynamic
        expected = [V2_RENAMES.get(n, n) if v2 else n for n in UNMASKED_FEATURE_NAMES]
        missing = [name for name in [*expected, MASKING_PROBS] if name not in features]
        if missing:
            raise ValueError(
                f"{path}: not a dynamic-masking pre-training file: features {missing} are "
                f"missing (found {sorted(features)})"
            )
        recipe = MaskingRecipe.from_example(example, path)
        return {
            "use_v2_feature_names": v2,
            "max_seq_length": len(features[ids_name].int64_list.value),
            "max_predictions_per_seq": recipe.max_predictions_per_seq,
            "compression_type": compression_of(path),
            "masking": "dynamic",
            "recipe": recipe,
            "word_starts": WORD_STARTS in features,
        }
    expected = [V2_RENAMES.get(n, n) if v2 else n for n in ORIGINAL_FEATURE_NAMES]
    missing = [name for name in expected if name not in features]
    if missing:
        raise ValueError(
            f"{path}: not a pre-training file: features {missing} are missing (found "
            f"{sorted(features)})"
        )
    return {
        "use_v2_feature_names": v2,
        "max_seq_length": len(features[ids_name].int64_list.value),
        "max_predictions_per_seq": len(features["masked_lm_positions"].int64_list.value),
        "compression_type": compression_of(path),
        "masking": "static",
    }


def _masking_kind(info: dict) -> str:
    """How the records of an inspected file are masked, in words (files read together must
    agree)."""
    if info["masking"] == "static":
        return "statically masked records"
    words = "with word starts" if info["word_starts"] else "without word starts"
    return f"dynamic-masking records {words} ({info['recipe']})"


def restore_masked_tokens(batch: dict) -> dict:
    """The encoder inputs of a batch with the original tokens back at the masked-LM positions:
    create_pretraining_data writes masked inputs ([MASK], random or kept tokens), a left-to-right
    LM needs the text itself.

    batch: pretraining_dataset's features (int32 input_word_ids, input_mask, input_type_ids
    [batch, seq_length]; masked_lm_positions, masked_lm_ids [batch, num_predictions];
    masked_lm_weights float32). Returns {"input_word_ids", "input_mask", "input_type_ids"},
    input_word_ids[b, masked_lm_positions[b, k]] = masked_lm_ids[b, k] wherever
    masked_lm_weights[b, k] > 0 (padding slots, weight 0, change nothing).
    """
    ids = batch["input_word_ids"]
    # [batch, num_predictions, seq_length]: prediction k of row b is at position s.
    hits = tf.logical_and(
        tf.one_hot(batch["masked_lm_positions"], tf.shape(ids)[1], on_value=True, off_value=False),
        (batch["masked_lm_weights"] > 0)[:, :, None],
    )
    # A position is predicted at most once, so the sum picks its one label.
    labels = tf.reduce_sum(
        tf.where(hits, tf.cast(batch["masked_lm_ids"], ids.dtype)[:, :, None], 0), axis=1
    )
    return {
        "input_word_ids": tf.where(tf.reduce_any(hits, axis=1), labels, ids),
        "input_mask": batch["input_mask"],
        "input_type_ids": batch["input_type_ids"],
    }


def pretraining_dataset(
    input_patterns: str,
    batch_size: int,
    max_seq_length: int,
    max_predictions_per_seq: int,
    is_training: bool = True,
    input_context: tf.distribute.InputContext | None = None,
    seed: int | None = None,
    shuffle_buffer_size: int = 100,
    restore_original_tokens: bool = False,
    vocab_size: int | None = None,
    repeat: bool = False,
) -> tf.data.Dataset:
    """Batches of pre-training examples, as the original input_fn_builder reads them.

    Training: files shuffled and read in parallel (cycle length up to 4 per host, as the
    original), repeated, records shuffled, full batches; evaluation: files in order, once, the
    last batch short. repeat (evaluation): the files in order over and over, full batches (a
    batch may run on into the next pass): the original's eval input_fn, which evaluates a fixed
    --max_eval_steps batches ("we don't want to encounter out-of-range exceptions").

    Records without masks (create_pretraining_data.py --masking=dynamic, detected) are masked
    here, per batch, with the recipe they carry (dynamic_masking.mask_batch): each record's
    masks come from a stateless seed of (seed, epoch, file, record index), so every pass over
    the files (epoch) masks anew, and a resumed run (which replays the same seeded order) masks
    as the uninterrupted one did; seed None masks as seed 0. Features come out
    int32 (masked_lm_weights float32) under the model's names: input_word_ids, input_mask,
    input_type_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights,
    next_sentence_labels ([batch, 1]). Original and v2 feature names and GZIP files are detected.
    restore_original_tokens: yield only the three encoder inputs, with the original tokens back
    at the masked positions (restore_masked_tokens): the input of a left-to-right LM.
    vocab_size: the model's; batches whose input or masked-LM ids are not below it fail,
      naming the file (check_token_ids).

    Every matched file is checked before anything is read (record_files.check_record_files);
    files that hold no records (a writer's shard that got none) are skipped with a warning.

    Raises:
      FileNotFoundError: a pattern matches no file.
      RecordFileError: a matched file is a side file (temporary, summary) or not TFRecords;
        every file holds no records; or the files mix GZIP and plain records.
      ValueError: a file's sequence or prediction length (read from its first record) differs
        from the flag's (naming the file and both;
        the original failed with "Can't parse serialized Example", google-research/bert#752).
    """
    files = skip_files_without_records(expand_input_patterns(input_patterns))
    check_record_files(files)
    # Every file's first record: a file of other lengths further down the list would otherwise
    # fail mid-run in tf.data's parser, naming neither the file nor the flag.
    infos = {path: inspect_pretraining_file(path) for path in files}
    info = infos[files[0]]
    mixed = [path for path in files if infos[path]["compression_type"] != info["compression_type"]]
    if mixed:
        raise RecordFileError(
            f"{files[0]} is {info['compression_type'] or 'uncompressed'} but {mixed[0]} is not: "
            "all files of --input_file must be written with the same --gzip_compress"
        )
    kind = _masking_kind(info)
    for path, other in infos.items():
        for name, flag in (
            ("max_seq_length", max_seq_length),
            ("max_predictions_per_seq", max_predictions_per_seq),
        ):
            if other[name] != flag:
                raise ValueError(
                    f"{path} holds examples with {name} = {other[name]}, but --{name}={flag}; "
                    f"pass --{name}={other[name]} or regenerate the data with --{name}={flag}"
                )
        if _masking_kind(other) != kind:
            raise RecordFileError(
                f"{files[0]} holds {kind} but {path} holds {_masking_kind(other)}: all files of "
                "--input_file must be written with the same --masking (and masking flags)"
            )
    dynamic = info["masking"] == "dynamic"
    if dynamic:
        spec = unmasked_feature_spec(
            max_seq_length, info["use_v2_feature_names"], info["word_starts"]
        )
    else:
        spec = pretraining_feature_spec(
            max_seq_length, max_predictions_per_seq, info["use_v2_feature_names"]
        )
    renames = {
        (V2_RENAMES.get(name, name) if info["use_v2_feature_names"] else name): model_name
        for name, model_name in _MODEL_NAMES.items()
    }
    masking_seed = 0 if seed is None else seed

    # Dynamic records: each record's random draws as it is read (record_draws), not for the
    # train step's inputs themselves.
    masks_records = dynamic and not restore_original_tokens

    def parse(records, sources, draws=None):
        parsed = tf.io.parse_example(records, spec)
        # int64 is not supported on TPU, and int32 is what the model takes.
        batch = {
            renames[name]: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            for name, value in parsed.items()
            if name in renames
        }
        checked = ("input_word_ids", "masked_lm_ids")
        if dynamic and restore_original_tokens:
            checked = ("input_word_ids",)  # the text itself: nothing to mask or restore
        elif dynamic:
            word_starts = parsed.get(WORD_STARTS)
            masked = mask_batch(
                batch["input_word_ids"],
                batch["input_mask"],
                info["recipe"],
                draws,
                None if word_starts is None else tf.cast(word_starts, tf.int32),
            )
            del masked["masked_lm_kinds"]
            batch.update(masked)
        if vocab_size is not None:
            batch = check_token_ids(batch, vocab_size, sources, checked)
        if restore_original_tokens:
            return (
                {name: batch[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
                if dynamic
                else restore_masked_tokens(batch)
            )
        return batch

    def read_file(path, file_index, epoch):
        # Each record with its file's name (for check_token_ids to name a file) and, to be
        # masked, its random draws, keyed by its epoch, file and index in the file.
        records = tf.data.TFRecordDataset(path, compression_type=info["compression_type"])
        paths = tf.data.Dataset.from_tensors(path).repeat()
        if not masks_records:
            return tf.data.Dataset.zip((records, paths))
        seq_length, vocab = max_seq_length, info["recipe"].vocab_size
        return tf.data.Dataset.zip((records, paths, tf.data.Dataset.counter())).map(
            lambda record, source, index: (
                record,
                source,
                record_draws(masking_seed, epoch, file_index, index, seq_length, vocab),
            ),
            num_parallel_calls=tf.data.AUTOTUNE,
        )

    dataset = tf.data.Dataset.from_tensor_slices((files, tf.range(len(files), dtype=tf.int64)))
    files_per_pass = len(files)
    if input_context is not None:
        dataset = dataset.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
        files_per_pass = len(
            range(input_context.input_pipeline_id, len(files), input_context.num_input_pipelines)
        )
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed).repeat()
    elif repeat:
        dataset = dataset.repeat()
    # The k-th file read belongs to pass (epoch) k // files_per_pass.
    dataset = dataset.enumerate().map(
        lambda k, item: (item[0], item[1], k // max(files_per_pass, 1))
    )
    if is_training:
        dataset = dataset.interleave(
            read_file,
            cycle_length=min(4, len(files)),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=seed is not None,
        )
        dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
    else:
        dataset = dataset.flat_map(read_file)
    per_replica = (
        input_context.get_per_replica_batch_size(batch_size) if input_context else batch_size
    )
    dataset = dataset.batch(per_replica, drop_remainder=is_training or repeat)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
