"""Writes samples/zh/reading/train.json and dev.json: a small reading-comprehension set in the
layout of CMRC 2018 (SQuAD v1.1 JSON, simplified Chinese), written for this project.

Each question names its answer and which occurrence of it in the context is meant (1 = the
first), so answer_start is computed, never typed by hand; several answers occur more than once
and the question asks about a later one (a reader that took the first occurrence would learn the
wrong span). Run from the repository root: python samples/zh/reading/make_reading.py
"""

import json
from pathlib import Path

HERE = Path(__file__).parent

# (context, [(question, answer, occurrence), ...])
TRAIN = [
    (
        "小林每天早上七点起床，先跑步半小时，再吃早饭。他最喜欢的早饭是豆浆和油条。"
        "周末的时候，小林会睡到八点才起床。",
        [
            ("小林平时几点起床？", "七点", 1),
            ("小林周末几点起床？", "八点", 1),
            ("小林最喜欢的早饭是什么？", "豆浆和油条", 1),
            ("小林起床以后先做什么？", "跑步半小时", 1),
        ],
    ),
    (
        "图书馆在学校的东边，食堂在学校的西边。学生们中午去食堂吃饭，下午去图书馆看书。"
        "图书馆晚上十点关门。",
        [
            ("食堂在学校的哪一边？", "西边", 1),
            ("学生们下午去哪里看书？", "图书馆", 2),
            ("图书馆几点关门？", "晚上十点", 1),
            ("图书馆在学校的哪一边？", "东边", 1),
        ],
    ),
    (
        "2018年，这座城市修建了第一条地铁，全长25公里。2020年又修建了第二条地铁，全长31公里。"
        "现在每天有50万人坐地铁上班。",
        [
            ("第一条地铁是哪一年修建的？", "2018年", 1),
            ("第二条地铁全长多少？", "31公里", 1),
            ("每天有多少人坐地铁上班？", "50万人", 1),
            ("第二条地铁是哪一年修建的？", "2020年", 1),
        ],
    ),
    (
        "王老师教语文，李老师教数学。王老师的课很有意思，学生们都喜欢上王老师的课。"
        "李老师的课有点难，但是李老师很耐心。",
        [
            ("谁教数学？", "李老师", 1),
            ("学生们都喜欢上谁的课？", "王老师", 3),
            ("谁很耐心？", "李老师", 3),
            ("王老师教什么？", "语文", 1),
        ],
    ),
    (
        "春天的时候，公园里开满了桃花。夏天，湖上有很多荷花。秋天，山上的树叶变红了。"
        "冬天下雪以后，孩子们在公园里堆雪人。",
        [
            ("春天公园里开满了什么花？", "桃花", 1),
            ("夏天湖上有什么？", "荷花", 1),
            ("孩子们在哪里堆雪人？", "公园", 2),
            ("秋天什么变红了？", "山上的树叶", 1),
        ],
    ),
    (
        "小张在一家公司做程序员，平时用 Python 写代码。他每周工作五天，每天工作八个小时。"
        "公司离他家很近，走路只要十分钟。",
        [
            ("小张用什么语言写代码？", "Python", 1),
            ("小张每周工作几天？", "五天", 1),
            ("小张走路去公司要多长时间？", "十分钟", 1),
            ("小张在公司做什么工作？", "程序员", 1),
        ],
    ),
    (
        "这家饭店的红烧鱼很有名，每条鱼卖八十元。很多客人从外地开车来吃红烧鱼。"
        "饭店的老板姓陈，他做菜已经做了二十年。",
        [
            ("这家饭店什么菜很有名？", "红烧鱼", 1),
            ("客人从外地开车来吃什么？", "红烧鱼", 2),
            ("饭店的老板姓什么？", "陈", 1),
            ("老板做菜做了多少年？", "二十年", 1),
        ],
    ),
    (
        "妹妹今年十岁，上小学四年级。她喜欢画画，也喜欢弹钢琴。每个星期六上午，妈妈带她去学钢琴。",
        [
            ("妹妹今年几岁？", "十岁", 1),
            ("妹妹上几年级？", "四年级", 1),
            ("妈妈什么时候带她去学钢琴？", "每个星期六上午", 1),
            ("妈妈带妹妹去学什么？", "钢琴", 2),
        ],
    ),
    (
        "这条河从西向东流，全长六百公里。河的北边是一片平原，南边是一座大山。"
        "山上住着一种很少见的鸟。",
        [
            ("这条河向哪个方向流？", "从西向东", 1),
            ("这条河有多长？", "六百公里", 1),
            ("河的南边是什么？", "一座大山", 1),
            ("河的北边是什么？", "一片平原", 1),
        ],
    ),
    (
        "火车早上六点从北京出发，下午两点到达上海。回来的火车晚上九点从上海出发，"
        "第二天早上五点到达北京。",
        [
            ("去上海的火车几点出发？", "早上六点", 1),
            ("回来的火车从哪里出发？", "上海", 2),
            ("回来的火车几点到达北京？", "早上五点", 1),
            ("火车几点到达上海？", "下午两点", 1),
        ],
    ),
]

DEV = [
    (
        "小红家养了一只白色的猫和一只黑色的狗。猫喜欢睡觉，狗喜欢出去玩。"
        "每天晚上，小红带狗去公园散步。",
        [
            ("小红家的猫是什么颜色的？", "白色", 1),
            ("谁喜欢睡觉？", "猫", 2),
            ("小红晚上带狗去哪里？", "公园", 1),
        ],
    ),
    (
        "这个学校有1200名学生和80名老师。学校里有一个很大的操场，学生们下课以后在操场上踢足球。",
        [
            ("学校有多少名学生？", "1200名", 1),
            ("学生们在哪里踢足球？", "操场", 2),
            ("学校有多少名老师？", "80名", 1),
        ],
    ),
    (
        "爷爷每天下午在家门口下棋。他下棋下得很好，邻居们都说爷爷是下棋的高手。",
        [
            ("爷爷每天下午做什么？", "下棋", 1),
            ("爷爷在哪里下棋？", "家门口", 1),
            ("邻居们说爷爷是什么？", "下棋的高手", 1),
        ],
    ),
    (
        "这本书一共有三百页，讲的是一个小男孩在海边长大的故事。作者写这本书用了五年。",
        [
            ("这本书有多少页？", "三百页", 1),
            ("小男孩在哪里长大？", "海边", 1),
            ("作者写这本书用了多长时间？", "五年", 1),
        ],
    ),
]


def answer_start(context: str, answer: str, occurrence: int) -> int:
    """The character offset of the occurrence-th (1-based) appearance of answer in context."""
    start = -1
    for _ in range(occurrence):
        start = context.find(answer, start + 1)
        if start == -1:
            raise ValueError(f"{answer!r} occurs fewer than {occurrence} times in {context!r}")
    return start


def squad_json(paragraphs, split: str) -> dict:
    """The paragraphs as a SQuAD v1.1 file, one article; question ids are split-p-q."""
    entries = []
    for p, (context, questions) in enumerate(paragraphs):
        qas = [
            {
                "id": f"{split}-{p}-{q}",
                "question": question,
                "answers": [{"text": answer, "answer_start": answer_start(context, answer, n)}],
            }
            for q, (question, answer, n) in enumerate(questions)
        ]
        entries.append({"context": context, "qas": qas})
    title = {"train": "阅读理解样例（训练）", "dev": "阅读理解样例（验证）"}[split]
    return {"version": "1.1", "data": [{"title": title, "paragraphs": entries}]}


def main():
    for split, paragraphs in (("train", TRAIN), ("dev", DEV)):
        text = json.dumps(squad_json(paragraphs, split), ensure_ascii=False, indent=1)
        (HERE / f"{split}.json").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
