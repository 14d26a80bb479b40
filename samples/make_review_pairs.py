"""Writes samples/review_pairs/train.tsv: sentence pairs in MRPC's file layout
(Quality, #1 ID, #2 ID, #1 String, #2 String), made from the project's own reviews
(samples/reviews/{train,dev}.tsv). A pair's label is 1 when both reviews are about the same
subject (make_reviews.SUBJECTS) and 0 otherwise, as MRPC asks whether two sentences are about
the same thing; half the pairs are positives. The task needs both segments.

Used by tests/tasks/test_finetuning_parity.py (and its reference,
tests/fixtures/make_hf_finetuning_trajectory.py) so that a clone checks fine-tuning parity on
text it ships. Deterministic; rerun to regenerate:

  python samples/make_review_pairs.py
"""

import csv
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reviews import SUBJECTS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PAIRS = 240


def read_reviews(path):
    with open(path, encoding="utf-8") as reader:
        rows = list(csv.reader(reader, delimiter="\t", quotechar=None))
    return [(sentence, label) for sentence, label in rows[1:]]


def subject_of(sentence):
    (subject,) = [subject for subject in SUBJECTS if subject in sentence.lower()]
    return subject


def main():
    by_subject = {}
    for split in ("train", "dev"):
        for sentence, _ in read_reviews(os.path.join(HERE, "reviews", f"{split}.tsv")):
            by_subject.setdefault(subject_of(sentence), []).append(sentence)
    subjects = sorted(by_subject)
    rng = random.Random(20261201)
    os.makedirs(os.path.join(HERE, "review_pairs"), exist_ok=True)
    path = os.path.join(HERE, "review_pairs", "train.tsv")
    with open(path + ".tmp", "w", encoding="utf-8", newline="") as writer:
        writer.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
        for index in range(PAIRS):
            same = index % 2
            first_subject, other_subject = rng.sample(subjects, 2)
            second_subject = first_subject if same else other_subject
            first = rng.choice(by_subject[first_subject])
            second = rng.choice([s for s in by_subject[second_subject] if s != first])
            writer.write(f"{same}\t{2 * index}\t{2 * index + 1}\t{first}\t{second}\n")
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
