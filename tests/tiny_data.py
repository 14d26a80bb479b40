"""A tiny BERT with real words in its vocabulary, and tiny tasks written with those words in the
file layouts of the generic task and of GLUE (CoLA, STS-B): data for fast end-to-end tests."""

import numpy as np

# 5 special tokens, then words and pieces: 100 lines, the tiny model's vocab_size.
TINY_WORDS = (
    "the a is of and to in good bad movie film great awful fun dull plot actor story loved hated "
    "boring brilliant quick brown fox jump over lazy dog hello world this that it was not very "
    "really best worst ever seen time , . ! ? ' ##s ##ing ##ed ##ly"
).split()

POSITIVE = ["good", "great", "fun", "loved", "brilliant", "best"]
NEGATIVE = ["bad", "awful", "dull", "hated", "boring", "worst"]
FILLER = ["the", "movie", "film", "plot", "story", "actor", "was", "very", "really", "it"]


def write_tiny_vocab(path) -> list[str]:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + TINY_WORDS
    tokens += [f"[unused{index}]" for index in range(100 - len(tokens))]
    path.write_text("".join(token + "\n" for token in tokens), encoding="utf-8")
    return tokens


def tiny_bert_config(**overrides):
    """The BertConfig of tests/conftest.py's tiny_encoder_kwargs (vocab 100, hidden 32, 2 layers)."""
    from official_bert.config import BertConfig
    from tests.conftest import tiny_encoder_kwargs

    values = tiny_encoder_kwargs()
    values["num_hidden_layers"] = values.pop("num_layers")
    values.update(overrides)
    return BertConfig(**values)


def tiny_sentences(count: int, rng: np.random.Generator) -> list[tuple[str, int]]:
    """(sentence, sentiment) pairs: four filler words and one positive (1) or negative (0) word,
    shuffled; sentiments alternate 0, 1, 0, ..."""
    sentences = []
    for index in range(count):
        label = index % 2
        words = list(rng.choice(FILLER, size=4)) + [rng.choice((NEGATIVE, POSITIVE)[label])]
        rng.shuffle(words)
        sentences.append((" ".join(words), label))
    return sentences


def write_tiny_task(directory, layout: str = "generic", seed: int = 0, counts=(64, 32)) -> None:
    """Writes train.tsv and dev.tsv (counts[0] and counts[1] examples) of a tiny task, and
    test.tsv when counts has a third number.

    layout "generic": header `sentence<TAB>label`, labels neg/pos (sentiment); test.tsv the same
      (with labels, as the generic task reads it).
    layout "cola": CoLA's columns without a header (source, label, mark, sentence); the label
      is the sentence's sentiment. test.tsv in CoLA's test layout: header `index<TAB>sentence`.
    layout "sts-b": STS-B's 10 columns with their header; a pair's score is 4.5 when both
      sentences have the same sentiment, else 0.5 (a regression task). test.tsv in STS-B's test
      layout: the first 9 columns (no score).
    """
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in zip(("train", "dev", "test"), counts, strict=False):
        if layout == "generic":
            lines = ["sentence\tlabel"]
            lines += [
                f"{text}\t{('neg', 'pos')[label]}" for text, label in tiny_sentences(count, rng)
            ]
        elif layout == "cola" and split == "test":
            lines = ["index\tsentence"]
            lines += [
                f"{index}\t{text}" for index, (text, _) in enumerate(tiny_sentences(count, rng))
            ]
        elif layout == "cola":
            lines = [f"tiny\t{label}\t\t{text}" for text, label in tiny_sentences(count, rng)]
        elif layout == "sts-b":
            header = "index genre filename year old_index source1 source2 sentence1 sentence2 score"
            # GLUE's STS-B test file has no score column.
            columns = 9 if split == "test" else 10
            lines = ["\t".join(header.split()[:columns])]
            firsts, seconds = tiny_sentences(count, rng), tiny_sentences(count, rng)
            order = rng.permutation(count)
            for index, ((text_a, label_a), position) in enumerate(zip(firsts, order, strict=True)):
                text_b, label_b = seconds[position]
                score = 4.5 if label_a == label_b else 0.5
                row = f"{index}\ttiny\tnone\t2026\t{index:04d}\tnone\tnone\t{text_a}\t{text_b}"
                lines.append(row if split == "test" else f"{row}\t{score}")
        else:
            raise ValueError(f"unknown layout {layout!r}")
        (directory / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_tiny_checkpoint(directory, **config_overrides):
    """Writes bert_model.ckpt (encoder + MLM + NSP heads, random weights of seed 1),
    bert_config.json (tiny_bert_config(**config_overrides)) and vocab.txt in `directory`."""
    import keras

    from official_bert.checkpoints import save_bert_weights
    from official_bert.models import BertEncoder, BertPretrainer

    directory.mkdir(parents=True, exist_ok=True)
    write_tiny_vocab(directory / "vocab.txt")
    config = tiny_bert_config(**config_overrides)
    config.to_json_file(str(directory / "bert_config.json"))
    keras.utils.set_random_seed(1)
    model = BertPretrainer(BertEncoder.from_bert_config(config))
    model.build()
    save_bert_weights(model, str(directory / "bert_model.ckpt"), "tf1")
    return directory


def write_tiny_sentiment_setup(directory, counts=(64, 32, 16), **config_overrides):
    """A tiny checkpoint (write_tiny_checkpoint) in directory/bert and the generic sentiment
    task (write_tiny_task, `counts` examples per split) in directory/data: (bert_dir, data_dir)."""
    bert_dir = write_tiny_checkpoint(directory / "bert", **config_overrides)
    data_dir = directory / "data"
    data_dir.mkdir()
    write_tiny_task(data_dir, counts=counts)
    return bert_dir, data_dir


def tiny_sentiment_options(setup, output_dir, **overrides):
    """ClassifierOptions fine-tuning the tiny checkpoint of `setup` (write_tiny_sentiment_setup's
    (bert_dir, data_dir)) on its sentiment task; a short run (16 tokens, batch 8, 1 epoch) unless
    `overrides` say otherwise."""
    from official_bert.checkpoints.loading import read_bert_config
    from official_bert.tasks.classification import ClassifierOptions

    bert_dir, data_dir = setup
    values = dict(
        bert_config=read_bert_config(str(bert_dir / "bert_config.json")),
        task_name="generic",
        processor_kwargs=dict(labels=["neg", "pos"]),
        data_dir=str(data_dir),
        vocab_file=str(bert_dir / "vocab.txt"),
        output_dir=str(output_dir),
        init_checkpoint=str(bert_dir / "bert_model.ckpt"),
        max_seq_length=16,
        train_batch_size=8,
        learning_rate=1e-3,
        num_train_epochs=1.0,
        seed=1,
    )
    values.update(overrides)
    return ClassifierOptions(**values)


# The tiny tagging task's entities: sentiment words, and two-word animals (B- then I-).
_TAGGED_ENTITIES = [([word], ["B-POS"]) for word in POSITIVE]
_TAGGED_ENTITIES += [([word], ["B-NEG"]) for word in NEGATIVE]
_TAGGED_ENTITIES += [(["brown", "fox"], ["B-ANIMAL", "I-ANIMAL"])]
_TAGGED_ENTITIES += [(["lazy", "dog"], ["B-ANIMAL", "I-ANIMAL"])]
# Outside words, some of several wordpieces ("films" = film ##s, "jumped" = jump ##ed).
_UNTAGGED = FILLER + ["films", "jumped", "over", "the", "that", "."]


def tiny_tagged_sentences(count: int, rng: np.random.Generator, long_every: int = 0):
    """(words, tags) of `count` sentences: 3 to 6 outside words and 1 or 2 entities, shuffled
    as blocks; with long_every > 0, every long_every-th sentence repeats that 8 times (about
    50 words, longer than a 32-piece sequence)."""
    sentences = []
    for index in range(count):
        blocks = [([str(word)], ["O"]) for word in rng.choice(_UNTAGGED, size=rng.integers(3, 7))]
        for entity in rng.choice(len(_TAGGED_ENTITIES), size=rng.integers(1, 3)):
            blocks.append(_TAGGED_ENTITIES[entity])
        order = list(rng.permutation(len(blocks)))
        if long_every and index % long_every == long_every - 1:
            order *= 8
        words = [word for block in order for word in blocks[block][0]]
        tags = [tag for block in order for tag in blocks[block][1]]
        sentences.append((words, tags))
    return sentences


def write_tiny_tagging_task(directory, seed: int = 0, counts=(64, 32, 16), long_every=8):
    """Writes train.txt, dev.txt, test.txt of a tiny NER task in CoNLL-2003's layout (`word POS
    NER`, "-DOCSTART- -X- O" first, a blank line after each sentence); the test file holds words
    only. Returns {split: [(words, tags)]}."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, count in zip(("train", "dev", "test"), counts, strict=True):
        sentences = tiny_tagged_sentences(count, rng, long_every)
        lines = ["-DOCSTART- -X- O", ""]
        for words, tags in sentences:
            for word, tag in zip(words, tags, strict=True):
                lines.append(word if split == "test" else f"{word} X {tag}")
            lines.append("")
        (directory / f"{split}.txt").write_text("\n".join(lines), encoding="utf-8")
        written[split] = sentences
    return written


# The tiny multi-label task's labels and the words that give them.
MULTI_LABEL_WORDS = {"animal": ["fox", "dog"], "neg": NEGATIVE, "pos": POSITIVE}


def write_tiny_multi_label_task(directory, seed: int = 0, counts=(96, 48, 24)) -> None:
    """Writes train.tsv, dev.tsv and test.tsv of a tiny multi-label task (header
    `sentence<TAB>labels`): four filler words and a word of each of 0 to 3 of the labels of
    MULTI_LABEL_WORDS, shuffled; the labels comma-separated in label order, empty for none.
    The test file has the same layout (its labels are not read for scoring)."""
    rng = np.random.default_rng(seed)
    names = sorted(MULTI_LABEL_WORDS)
    directory.mkdir(parents=True, exist_ok=True)
    for split, count in zip(("train", "dev", "test"), counts, strict=False):
        lines = ["sentence\tlabels"]
        for index in range(count):
            chosen = [name for bit, name in enumerate(names) if (index >> bit) & 1]
            words = list(rng.choice(FILLER, size=4))
            words += [str(rng.choice(MULTI_LABEL_WORDS[name])) for name in chosen]
            rng.shuffle(words)
            lines.append(f"{' '.join(words)}\t{','.join(chosen)}")
        (directory / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def tiny_multiple_choice_questions(count: int, rng: np.random.Generator, max_choices: int = 4):
    """(context, question, candidates, answer index) of `count` questions: the context is four
    filler words and a sentiment word, shuffled; the question "it was"; the right candidate is a
    word of the context's sentiment, the others (1 to max_choices - 1, random) filler words.
    (Distractors of the other sentiment would leave a tiny model from random weights no signal
    to start from: which sentiment is right alternates, so a candidate's word alone says
    nothing.)"""
    questions = []
    for index in range(count):
        same = (NEGATIVE, POSITIVE)[index % 2]
        words = list(rng.choice(FILLER, size=4)) + [str(rng.choice(same))]
        rng.shuffle(words)
        choices = [str(word) for word in rng.choice(FILLER, size=rng.integers(1, max_choices))]
        answer = int(rng.integers(0, len(choices) + 1))
        choices.insert(answer, str(rng.choice(same)))
        questions.append((" ".join(words), "it was", choices, answer))
    return questions


def write_tiny_multiple_choice_task(directory, layout="swag", seed=0, counts=(256, 64, 16)):
    """Writes a tiny multiple-choice task (tiny_multiple_choice_questions) in SWAG's layout
    (train.csv, val.csv, test.csv: always 4 candidates; test.csv without labels) or C3's as CLUE
    ships it (d-train.json and m-train.json halves, d-dev.json, m-dev.json, test1.1.json without
    answers: 2 to 4 candidates). Returns {split: questions}."""
    import csv
    import io
    import json

    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for split, count in zip(("train", "dev", "test"), counts, strict=True):
        questions = tiny_multiple_choice_questions(count, rng, 4)
        if layout == "swag":
            questions = [q for q in questions if len(q[2]) == 4] or questions[:0]
            while len(questions) < count:
                extra = tiny_multiple_choice_questions(count, rng, 4)
                questions += [q for q in extra if len(q[2]) == 4][: count - len(questions)]
            header = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source"]
            header += [f"ending{i}" for i in range(4)] + ([] if split == "test" else ["label"])
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(header)
            for number, (context, question, choices, answer) in enumerate(questions):
                row = [number, f"video{number}", number, f"{context} {question}", context]
                row += [question, "gold", *choices] + ([] if split == "test" else [answer])
                writer.writerow(row)
            name = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}[split]
            (directory / name).write_text(out.getvalue(), encoding="utf-8")
        else:
            documents = [
                [
                    [context],
                    [{"question": question, "choice": choices, "answer": choices[answer]}],
                    f"{split}-{n}",
                ]
                for n, (context, question, choices, answer) in enumerate(questions)
            ]
            if split == "test":
                for document in documents:
                    del document[1][0]["answer"]
                (directory / "test1.1.json").write_text(json.dumps(documents), encoding="utf-8")
            else:
                half = len(documents) // 2
                for prefix, part in (("d", documents[:half]), ("m", documents[half:])):
                    (directory / f"{prefix}-{split}.json").write_text(
                        json.dumps(part, ensure_ascii=False), encoding="utf-8"
                    )
        written[split] = questions
    return written


def tiny_classifier_options(data_dir, output_dir, **overrides):
    """ClassifierOptions of a generic task in `data_dir` (write_tiny_task's) fine-tuned from the
    original tiny checkpoint (tests/fixtures/orig_tiny_v1000), without the fast kernels."""
    from official_bert.tasks.classification import ClassifierOptions
    from tests.conftest import ORIGINAL_TINY

    values = dict(
        task_name="generic",
        data_dir=str(data_dir),
        output_dir=str(output_dir),
        init_checkpoint=str(ORIGINAL_TINY / "bert_model.ckpt"),
        max_seq_length=32,
        train_batch_size=16,
        num_train_epochs=0.5,
        do_train=True,
        fast_kernels=False,
    )
    values.update(overrides)
    return ClassifierOptions(**values)
