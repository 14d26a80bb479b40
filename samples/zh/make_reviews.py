"""Writes samples/zh/classification/{train,dev,test}.tsv: a small Chinese sentiment task in
ChnSentiCorp's file layout (a `label<TAB>text_a` header, then 1 = positive, 0 = negative).

Short reviews of hotels, shops and products written for this project: a subject, one or two
verdicts of the same polarity and sometimes a closing remark. The subjects of dev and test never
occur in train, so a model must judge the verdict, not remember what was reviewed. Every character
is in samples/zh/vocab.txt (python samples/zh/make_vocab.py after a change). Deterministic; rerun
to regenerate:

  python samples/zh/make_reviews.py
"""

import os
import random

TRAIN_SUBJECTS = [
    "这家酒店",
    "楼下的面馆",
    "这台洗衣机",
    "新买的台灯",
    "这本小说",
    "车站旁边的旅馆",
    "这款耳机",
    "学校门口的书店",
    "这家火锅店",
    "网上买的外套",
    "这把雨伞",
    "小区里的健身房",
    "这次的导游",
    "这台电脑",
    "湖边的民宿",
    "这双跑鞋",
    "公司附近的咖啡馆",
    "这个行李箱",
]
HELD_OUT_SUBJECTS = [
    "这家宾馆",
    "街角的包子铺",
    "这台冰箱",
    "新买的书包",
    "山上的客栈",
    "这部电影",
    "这款手机",
    "机场的餐厅",
]
POSITIVE = [
    "服务非常周到",
    "价格实惠，质量也好",
    "环境干净又安静",
    "用起来很顺手",
    "味道好极了",
    "比想象中还要好",
    "做工精细，看得出很用心",
    "房间宽敞明亮",
    "送货很快，包装完好",
    "老板热情，让人心里暖暖的",
    "物有所值",
    "每个细节都让人满意",
]
NEGATIVE = [
    "服务态度很差",
    "价格贵，质量却一般",
    "环境又脏又吵",
    "用了两天就坏了",
    "味道让人失望",
    "和描述的完全不一样",
    "做工粗糙，到处是毛病",
    "房间又小又暗",
    "等了很久才送到，盒子也破了",
    "老板爱理不理，让人生气",
    "根本不值这个价",
    "处处让人不满意",
]
POSITIVE_ENDINGS = ["下次还会再来。", "推荐给大家。", "总之很满意。", "值得一试。", ""]
NEGATIVE_ENDINGS = ["再也不会来了。", "不推荐。", "总之很后悔。", "大家别上当。", ""]
SPLIT_SIZES = {"train": 240, "dev": 60, "test": 60}


def review(rng: random.Random, subjects: list[str], positive: bool) -> str:
    verdicts = POSITIVE if positive else NEGATIVE
    endings = POSITIVE_ENDINGS if positive else NEGATIVE_ENDINGS
    first, second = rng.sample(verdicts, 2)
    text = f"{rng.choice(subjects)}{first}"
    if rng.random() < 0.5:
        text += f"，{second}"
    return text + "。" + rng.choice(endings)


def main():
    rng = random.Random(26)
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "classification")
    os.makedirs(folder, exist_ok=True)
    for split, size in SPLIT_SIZES.items():
        subjects = TRAIN_SUBJECTS if split == "train" else HELD_OUT_SUBJECTS
        rows = ["label\ttext_a\n"]
        for index in range(size):
            positive = index % 2 == 0
            rows.append(f"{int(positive)}\t{review(rng, subjects, positive)}\n")
        rows[1:] = rng.sample(rows[1:], len(rows) - 1)
        with open(os.path.join(folder, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.writelines(rows)


if __name__ == "__main__":
    main()
