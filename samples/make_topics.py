"""Writes samples/topics/{train,dev,test}.tsv: a small multi-label set (run_classifier.py
--task_name=generic --multi_label).

Short messages written for this project, each about none, one, two or three of five topics
(food, music, sport, travel, weather); the label column lists a message's topics, comma-separated,
and is empty for small talk about none of them. Each topic has its own phrases; dev and test use
phrases that never occur in train, so a model must recognise "the pasta was overcooked" as food
without having seen it labelled. Deterministic; rerun to regenerate:

  python samples/make_topics.py
"""

import os
import random

TOPICS = ("food", "music", "sport", "travel", "weather")
TRAIN_PHRASES = {
    "food": [
        "the soup was too salty",
        "we baked bread on sunday",
        "the curry at the corner shop is cheap",
        "she cooked rice with beans",
        "the cake needed more sugar",
        "breakfast was eggs and toast",
        "the fish market sells fresh cod",
        "he ordered a cheese sandwich",
    ],
    "music": [
        "the band played until midnight",
        "she practises the violin every evening",
        "the new album sounds great",
        "the choir sang an old song",
        "he bought a second hand guitar",
        "the drummer lost a stick",
        "we heard a jazz trio downstairs",
        "the concert hall was full",
    ],
    "sport": [
        "our team won the football match",
        "she runs five miles before work",
        "the tennis final went to three sets",
        "he swims thirty lengths a day",
        "the cycling race passed our street",
        "the goalkeeper saved a penalty",
        "they train at the gym on tuesdays",
        "the rugby score was close",
    ],
    "travel": [
        "the train to the coast was late",
        "we booked a flight to lisbon",
        "the hotel room had a sea view",
        "our luggage went missing at the airport",
        "he took the ferry to the island",
        "the bus tour lasted all day",
        "she packed her suitcase last night",
        "the passport office was busy",
    ],
    "weather": [
        "it rained all afternoon",
        "the wind knocked over the fence",
        "there was frost on the car this morning",
        "the sun came out after lunch",
        "a storm is coming tonight",
        "the fog was thick by the river",
        "it snowed for the first time this winter",
        "the heat made everyone tired",
    ],
}
HELD_OUT_PHRASES = {
    "food": [
        "the pasta was overcooked",
        "we shared a plate of dumplings",
        "the restaurant serves a fine stew",
        "he grilled vegetables for dinner",
    ],
    "music": [
        "the orchestra tuned their instruments",
        "she sings in a folk group",
        "the piano recital was moving",
        "the festival stage had three bands",
    ],
    "sport": [
        "the marathon started at dawn",
        "he scored twice in the hockey game",
        "the boxing match ended early",
        "the climbers reached the summit wall at the gym",
    ],
    "travel": [
        "the night bus crossed the border",
        "we rented a car for the road trip",
        "the cruise ship docked at noon",
        "our connecting flight was cancelled",
    ],
    "weather": [
        "hail damaged the greenhouse",
        "the forecast promises clear skies",
        "thunder woke the children",
        "a cold drizzle lasted all week",
    ],
}
SMALL_TALK = [
    "i will call you back later",
    "thanks for the message",
    "see you on monday",
    "the meeting moved to room four",
    "please sign the form",
    "my sister says hello",
]
OPENERS = ["", "by the way, ", "guess what: ", "just so you know, ", "also, "]
# How many topics a message has: none (small talk) to three.
TOPIC_COUNTS = (0, 1, 1, 1, 2, 2, 3)


def _messages(rng, phrases, count):
    rows = []
    for _ in range(count):
        topics = sorted(rng.sample(TOPICS, rng.choice(TOPIC_COUNTS)), key=TOPICS.index)
        parts = [rng.choice(phrases[topic]) for topic in topics] or [rng.choice(SMALL_TALK)]
        rng.shuffle(parts)
        text = f"{rng.choice(OPENERS)}{' and '.join(parts)} ."
        rows.append((text[0].upper() + text[1:], ",".join(topics)))
    return rows


def main():
    rng = random.Random(20261201)
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topics")
    os.makedirs(out, exist_ok=True)
    splits = {
        "train": _messages(rng, TRAIN_PHRASES, 320),
        "dev": _messages(rng, HELD_OUT_PHRASES, 100),
    }
    for split, rows in splits.items():
        with open(os.path.join(out, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write("sentence\tlabels\n")
            f.writelines(f"{text}\t{labels}\n" for text, labels in rows)
    test = [text for text, _ in _messages(rng, HELD_OUT_PHRASES, 40)]
    with open(os.path.join(out, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("index\tsentence\n")
        f.writelines(f"{index}\t{text}\n" for index, text in enumerate(test))


if __name__ == "__main__":
    main()
