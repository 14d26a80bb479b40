"""Writes samples/choices/{train,val,test}.csv: a small multiple-choice task in SWAG's file layout
(`,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0..3,label`; test.csv without the
label), for `run_classifier.py --task_name=swag`.

Each question is one of the project's short reviews (make_reviews.py: a subject and a verdict)
followed by "Next time, we" and four endings: going back to or staying away from the review's
subject or another one. The right ending needs both the subject and whether the verdict is good,
and the verdicts of val and test are phrasings that train never shows (as in make_reviews.py).
Deterministic; rerun to regenerate:

  python samples/make_choices.py
"""

import csv
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reviews import (  # noqa: E402
    HELD_OUT_BAD,
    HELD_OUT_GOOD,
    OPENERS,
    SUBJECTS,
    TRAIN_BAD,
    TRAIN_GOOD,
)

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = {"train.csv": 320, "val.csv": 120, "test.csv": 40}
QUESTION = "Next time, we"
GO_BACK = "will happily go back to {} ."
STAY_AWAY = "will stay away from {} ."


def questions(rng, count, good, bad):
    """(review, endings, index of the right ending) of `count` questions, half with a good
    verdict."""
    rows = []
    for index in range(count):
        is_good = index % 2 == 0
        subject, other = rng.sample(SUBJECTS, 2)
        review = f"{rng.choice(OPENERS)}{subject} {rng.choice(good if is_good else bad)} ."
        right = (GO_BACK if is_good else STAY_AWAY).format(subject)
        endings = [GO_BACK.format(subject), STAY_AWAY.format(subject)]
        endings += [GO_BACK.format(other), STAY_AWAY.format(other)]
        rng.shuffle(endings)
        rows.append((review[0].upper() + review[1:], endings, endings.index(right)))
    rng.shuffle(rows)
    return rows


def main():
    rng = random.Random(20261205)
    folder = os.path.join(HERE, "choices")
    os.makedirs(folder, exist_ok=True)
    for name, count in SPLITS.items():
        held_out = name != "train.csv"
        rows = questions(
            rng,
            count,
            HELD_OUT_GOOD if held_out else TRAIN_GOOD,
            HELD_OUT_BAD if held_out else TRAIN_BAD,
        )
        labelled = name != "test.csv"
        header = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source"]
        header += [f"ending{i}" for i in range(4)] + (["label"] if labelled else [])
        path = os.path.join(folder, name)
        with open(path + ".tmp", "w", encoding="utf-8", newline="") as writer:
            out = csv.writer(writer, lineterminator="\n")
            out.writerow(header)
            for index, (review, endings, answer) in enumerate(rows):
                row = [index, f"review-{index}", index, f"{review} {QUESTION}", review, QUESTION]
                out.writerow(row + ["gold", *endings] + ([answer] if labelled else []))
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
