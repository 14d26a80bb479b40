"""Writes samples/zh/ner/{train,dev,test}.txt: a small Chinese named-entity task in MSRA NER's
file layout (one character per line, `character TAG` separated by a space, BIO tags PER / LOC /
ORG, a blank line after each sentence).

Sentences written for this project from templates and name lists. The people, places and
organisations of dev and test never occur in train, so a tagger must recognise a name from its
context. Every character is in samples/zh/vocab.txt (python samples/zh/make_vocab.py after a
change). Deterministic; rerun to regenerate:

  python samples/zh/make_entities.py
"""

import os
import random
import re

# {PER}, {LOC}, {ORG} are filled with a name of that type; other characters are outside any entity.
TEMPLATES = [
    "{PER}上个月去{LOC}开了一家面包店。",
    "{ORG}的董事会周二在{LOC}开会。",
    "{PER}加入{ORG}，负责新产品的研发。",
    "从{LOC}飞往{LOC}的航班因大雾取消了。",
    "{ORG}宣布由{PER}带领新的团队。",
    "昨天{PER}和{PER}沿着{LOC}的河边散步。",
    "{LOC}的博物馆从{ORG}买下了一幅画。",
    "{PER}说，这个结果让{ORG}的每个人都很意外。",
    "{PER}在{LOC}长大，后来去了外地读书。",
    "{ORG}的工程师花了三个星期测试新机器。",
    "据{PER}介绍，{LOC}的灯会吸引了很多游客。",
    "{ORG}和{ORG}签订了合作协议。",
    "{LOC}的市长感谢{PER}多年的付出。",
    "{PER}赢得了{ORG}举办的象棋比赛。",
    "一场大雨让{LOC}的几条街道都积了水。",
    "{PER}写了一本关于{LOC}历史的书。",
    "{ORG}明年将在{LOC}设立办事处。",
    "{PER}在{LOC}的一次会议上认识了{PER}。",
]

TRAIN_NAMES = {
    "PER": ["王小明", "李静", "张伟", "陈晓燕", "刘洋", "赵丽", "周建国", "吴敏"],
    "LOC": ["杭州", "成都", "西安", "青岛", "昆明", "大连", "苏州", "厦门"],
    "ORG": ["光明科技公司", "东方银行", "长江大学", "红星汽车厂", "绿叶出版社", "海风航空"],
}
HELD_OUT_NAMES = {
    "PER": ["孙志强", "马丽华", "黄磊", "林雪", "郭明"],
    "LOC": ["南京", "长沙", "武汉", "桂林", "拉萨"],
    "ORG": ["新华书店", "北方电力公司", "蓝天医院", "白云机场", "黄河水利学院"],
}
SPLIT_SIZES = {"train": 200, "dev": 50, "test": 50}


def tagged_sentence(rng: random.Random, names: dict[str, list[str]]) -> list[tuple[str, str]]:
    """One sentence as (character, BIO tag) pairs."""
    template = rng.choice(TEMPLATES)
    characters = []
    for part in re.split(r"(\{[A-Z]+\})", template):
        if part.startswith("{"):
            entity_type = part[1:-1]
            name = rng.choice(names[entity_type])
            characters += [
                (char, ("B-" if offset == 0 else "I-") + entity_type)
                for offset, char in enumerate(name)
            ]
        else:
            characters += [(char, "O") for char in part]
    return characters


def main():
    rng = random.Random(26)
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ner")
    os.makedirs(folder, exist_ok=True)
    for split, size in SPLIT_SIZES.items():
        names = TRAIN_NAMES if split == "train" else HELD_OUT_NAMES
        lines = []
        for _ in range(size):
            lines += [f"{char} {tag}\n" for char, tag in tagged_sentence(rng, names)]
            lines.append("\n")
        with open(os.path.join(folder, f"{split}.txt"), "w", encoding="utf-8") as f:
            f.writelines(lines)


if __name__ == "__main__":
    main()
