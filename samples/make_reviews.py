"""Writes samples/reviews/{train,dev,test}.tsv: the demo's labelled set (SST-2's file layout).

Short reviews written for this project: a subject and a verdict, positive (1) or negative (0).
The verdicts of dev and test are phrasings that never occur in train, so a model must know that
"a joy from start to finish" is good without having seen it labelled: pre-trained weights do,
a model pre-trained for a minute on sample_text.txt barely. Deterministic; rerun to regenerate:

  python samples/make_reviews.py
"""

import os
import random

SUBJECTS = [
    "the soup at the harbour cafe",
    "this novel about clockmakers",
    "the night train to the coast",
    "my new walking boots",
    "the reopened town museum",
    "the hotel by the lake",
    "the new phone",
    "the swimming lessons",
    "the film festival in the barn",
    "the concert in the park",
    "the city library",
    "the electric bus",
    "the mountain hut",
    "the second hand bookshop",
    "the repaired square",
    "the school trip",
    "the supermarket kettle",
    "the river path",
    "the wedding comedy",
    "this wool jumper",
    "the new swimming pool",
    "the dumpling stall",
    "the campsite",
    "the language course",
    "the washing machine repair",
    "the old cinema",
    "the tomato seeds",
    "the football final",
    "the audio guide",
    "the breakfast",
]
TRAIN_GOOD = [
    "was wonderful",
    "was excellent",
    "was a real pleasure",
    "made us very happy",
    "exceeded every expectation",
    "was worth every penny",
    "is the best we have tried",
    "was friendly and warm",
    "felt comfortable and well made",
    "was a delight",
    "left us smiling",
    "was great fun",
    "is highly recommended",
    "worked perfectly",
    "was beautiful",
    "impressed everyone",
    "was fantastic",
    "was clean and pleasant",
    "deserves praise",
    "was lovely",
]
TRAIN_BAD = [
    "was terrible",
    "was awful",
    "was a waste of money",
    "made us angry",
    "disappointed everyone",
    "broke after a week",
    "is the worst we have tried",
    "was rude and cold",
    "felt cheap and flimsy",
    "was a nightmare",
    "left us annoyed",
    "was boring",
    "is not recommended",
    "never worked properly",
    "was ugly",
    "upset everyone",
    "was dreadful",
    "was dirty and unpleasant",
    "deserves complaints",
    "was miserable",
]
HELD_OUT_GOOD = [
    "was a joy from start to finish",
    "was simply superb",
    "we would gladly do it again",
    "was brilliant",
    "made the whole day better",
    "was charming and delightful",
    "could hardly have been better",
    "won us over completely",
    "was outstanding",
    "was a wonderful surprise",
]
HELD_OUT_BAD = [
    "was a complete disaster",
    "was simply awful",
    "we would never do it again",
    "was horrible",
    "ruined the whole day",
    "was grim and depressing",
    "could hardly have been worse",
    "let us down completely",
    "was appalling",
    "was an unpleasant shock",
]
OPENERS = ["", "honestly, ", "to be fair, ", "in short, ", "I think ", "we all agreed that "]


def _reviews(rng, good, bad, count):
    rows = []
    for i in range(count):
        label = i % 2
        verdict = rng.choice(good if label else bad)
        sentence = f"{rng.choice(OPENERS)}{rng.choice(SUBJECTS)} {verdict} ."
        rows.append((sentence[0].upper() + sentence[1:], label))
    rng.shuffle(rows)
    return rows


def main():
    rng = random.Random(20261129)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reviews")
    os.makedirs(out, exist_ok=True)
    splits = {
        "train": _reviews(rng, TRAIN_GOOD, TRAIN_BAD, 320),
        "dev": _reviews(rng, HELD_OUT_GOOD, HELD_OUT_BAD, 120),
    }
    for split, rows in splits.items():
        with open(os.path.join(out, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("sentence\tlabel\n")
            f.writelines(f"{sentence}\t{label}\n" for sentence, label in rows)
    test = [sentence for sentence, _ in _reviews(rng, HELD_OUT_GOOD, HELD_OUT_BAD, 40)]
    with open(os.path.join(out, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("index\tsentence\n")
        f.writelines(f"{i}\t{sentence}\n" for i, sentence in enumerate(test))


if __name__ == "__main__":
    main()
