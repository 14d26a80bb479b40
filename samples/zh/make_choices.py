"""Writes samples/zh/choices/{d-train,d-dev,test1.1}.json: a small Chinese multiple-choice task
in C3's file layout as CLUE ships it (a JSON list of [paragraphs, questions, id], each question
{"question", "choice", "answer"}; test1.1.json without answers), for `run_classifier.py
--task_name=c3`.

Each question is one of the project's Chinese reviews (make_reviews.py) with "作者的意思是？" and
two to four candidates, as C3's questions have: recommending or not the review's subject, and
sometimes the same for another subject. The subjects of dev and test never occur in train.
Every character is in samples/zh/vocab.txt. Deterministic; rerun to regenerate:

  python samples/zh/make_choices.py
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_reviews import HELD_OUT_SUBJECTS, TRAIN_SUBJECTS, review  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = {"d-train.json": 240, "d-dev.json": 60, "test1.1.json": 40}
QUESTION = "作者的意思是？"


def documents(rng, count, subjects, with_answers, split):
    """C3 documents of one question each; half the reviews are positive."""
    rows = []
    for index in range(count):
        positive = index % 2 == 0
        subject, other = rng.sample(subjects, 2)
        text = review(rng, [subject], positive)
        right = f"{'' if positive else '不'}推荐{subject}"
        choices = [f"推荐{subject}", f"不推荐{subject}", f"推荐{other}", f"不推荐{other}"]
        wrong = [choice for choice in choices if choice != right]
        choices = [right, *rng.sample(wrong, rng.randint(1, 3))]
        rng.shuffle(choices)
        question = {"question": QUESTION, "choice": choices}
        if with_answers:
            question["answer"] = right
        rows.append([[text], [question], f"{split}-{index}"])
    rng.shuffle(rows)
    return rows


def main():
    rng = random.Random(1205)
    folder = os.path.join(HERE, "choices")
    os.makedirs(folder, exist_ok=True)
    for name, count in SPLITS.items():
        subjects = TRAIN_SUBJECTS if name == "d-train.json" else HELD_OUT_SUBJECTS
        rows = documents(rng, count, subjects, name != "test1.1.json", name.split(".")[0])
        path = os.path.join(folder, name)
        with open(path + ".tmp", "w", encoding="utf-8") as writer:
            # A document per line: readable, and a fraction of an indented file's size.
            lines = (json.dumps(row, ensure_ascii=False) for row in rows)
            writer.write("[\n" + ",\n".join(lines) + "\n]\n")
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
