"""Writes samples/entities/{train,dev,test}.txt: a small named-entity task in CoNLL-2003's file
layout (`word POS chunk NER`, BIO tags PER / LOC / ORG, a blank line after each sentence).

Sentences written for this project from templates and name lists. The people, places and
organisations of dev and test never occur in train, and a third of the templates are held out
too, so a tagger must recognise a name from its context and its word shape rather than remember
it: pre-trained features do, a randomly initialised model does not. The POS and chunk columns
are placeholders ("X", "O"). Deterministic; rerun to regenerate:

  python samples/make_entities.py
"""

import os
import random

# {PER}, {LOC}, {ORG} are filled with a name of that type; other words are outside any entity.
TEMPLATES = [
    "{PER} opened a small bakery in {LOC} last spring .",
    "The board of {ORG} met in {LOC} on Tuesday .",
    "{PER} joined {ORG} as head of research .",
    "Flights from {LOC} to {LOC} were cancelled because of the storm .",
    "{ORG} announced that {PER} will lead the new team .",
    "Yesterday {PER} and {PER} walked along the river in {LOC} .",
    "The museum in {LOC} bought a painting from {ORG} .",
    "{PER} said the results surprised everyone at {ORG} .",
    "Shares of {ORG} rose after the report from {LOC} .",
    "A new bridge will connect {LOC} with the old harbour .",
    "{PER} grew up in {LOC} before moving abroad .",
    "Engineers at {ORG} tested the engine for three weeks .",
    "According to {PER} , the festival in {LOC} drew record crowds .",
    "{ORG} and {ORG} signed a trade agreement .",
    "The mayor of {LOC} thanked {PER} for her work .",
    "{PER} won the chess tournament held by {ORG} .",
    "Heavy rain flooded several streets in {LOC} .",
    "{PER} wrote a book about the history of {LOC} .",
    "Workers at {ORG} went on strike over pay .",
    "The train to {LOC} was delayed by two hours .",
    "{PER} thanked her colleagues at {ORG} .",
    "Tourists in {LOC} visited the castle and the market .",
    "{ORG} will open an office in {LOC} next year .",
    "{PER} met {PER} at a conference in {LOC} .",
]
# Held out of train: dev and test sentences use these templates too.
HELD_OUT_TEMPLATES = 8

TRAIN_NAMES = {
    "PER": [
        "Maria Okafor",
        "John Peters",
        "Ines Duarte",
        "Tomasz Nowak",
        "Aiko Tanaka",
        "Samuel Brooks",
        "Leila Haddad",
        "Pieter de Vries",
        "Grace Mensah",
        "Oliver Grant",
        "Chen Wei",
        "Fatima Benali",
        "Lukas Meyer",
        "Rosa Jimenez",
        "Kwame Asante",
        "Elena Popescu",
        "Hannah",
        "Daniel",
    ],
    "LOC": [
        "Lisbon",
        "Nairobi",
        "Krakow",
        "Osaka",
        "Glasgow",
        "Valparaiso",
        "Tampere",
        "Porto Alegre",
        "Leeds",
        "Hamburg",
        "New Orleans",
        "Cork",
        "Ghent",
        "Brisbane",
        "Lake Geneva",
        "Cape Town",
    ],
    "ORG": [
        "Northwind Bank",
        "Helix Motors",
        "the Royal Opera",
        "Baltic Shipping",
        "Greenfield Foods",
        "Orion Airlines",
        "the City Council",
        "Redwood University",
        "Atlas Insurance",
        "Blue Harbour Energy",
        "Nordic Rail",
        "the Science Museum",
    ],
}
HELD_OUT_NAMES = {
    "PER": [
        "Amara Nwosu",
        "Felix Hartmann",
        "Yuki Sato",
        "Carmen Ortega",
        "Ibrahim Toure",
        "Sofia Lindqvist",
        "Marek Dvorak",
        "Priya Raman",
        "Owen Gallagher",
        "Nadia Karimi",
        "Lucia",
        "Tobias",
    ],
    "LOC": [
        "Bergen",
        "Accra",
        "Seville",
        "Dundee",
        "Montevideo",
        "Sapporo",
        "Rotterdam",
        "Adelaide",
        "Salt Lake City",
        "Tallinn",
        "Lyon",
        "Galway",
    ],
    "ORG": [
        "Silverline Telecom",
        "Cobalt Mining",
        "the National Library",
        "Eastgate Pharma",
        "Summit Airways",
        "Meridian Trust",
        "Harbor Point Hospital",
        "Vireo Software",
        "the Football Association",
        "Crescent Media",
    ],
}


def tagged_sentence(template: str, names: dict, rng: random.Random) -> list[tuple[str, str]]:
    """(word, BIO tag) pairs of one sentence."""
    words = []
    for token in template.split():
        if token.startswith("{") and token.endswith("}"):
            entity_type = token[1:-1]
            name = rng.choice(names[entity_type]).split()
            # A leading "the" is part of the organisation's name in CoNLL-2003 only when
            # capitalised; keep it outside.
            if name[0] == "the":
                words.append(("the", "O"))
                name = name[1:]
            words += [
                (word, ("B-" if index == 0 else "I-") + entity_type)
                for index, word in enumerate(name)
            ]
        else:
            words.append((token, "O"))
    return words


def write_split(path: str, sentences: list[list[tuple[str, str]]]) -> None:
    lines = ["-DOCSTART- -X- -X- O", ""]
    for sentence in sentences:
        lines += [f"{word} X O {tag}" for word, tag in sentence]
        lines.append("")
    with open(path, "w", encoding="utf-8") as writer:
        writer.write("\n".join(lines))


def main() -> None:
    rng = random.Random(2026)
    directory = os.path.join(os.path.dirname(os.path.abspath(__file__)), "entities")
    os.makedirs(directory, exist_ok=True)
    seen_templates = TEMPLATES[HELD_OUT_TEMPLATES:]
    splits = {
        "train": [
            tagged_sentence(rng.choice(seen_templates), TRAIN_NAMES, rng) for _ in range(240)
        ],
        "dev": [tagged_sentence(rng.choice(TEMPLATES), HELD_OUT_NAMES, rng) for _ in range(80)],
        "test": [tagged_sentence(rng.choice(TEMPLATES), HELD_OUT_NAMES, rng) for _ in range(40)],
    }
    for split, sentences in splits.items():
        write_split(os.path.join(directory, f"{split}.txt"), sentences)
        print(f"{split}: {len(sentences)} sentences")


if __name__ == "__main__":
    main()
