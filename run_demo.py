"""The end-to-end demo on data that ships with the project (`make demo`).

  python run_demo.py --output_dir=output/demo
  python run_demo.py --lang=zh    # the Chinese samples: jieba whole-word masking, sentiment, NER

vocab -> create_pretraining_data.py -> run_pretraining.py -> run_classifier.py (from
all-MiniLM-L6-v2 when installed, else from the model just pre-trained) -> export_tfhub.py ->
predictions for raw sentences from the exported SavedModels. About 3 minutes on 2 cores;
--quick runs the same stages with fewer steps.
"""

import _quiet_start  # noqa: F401  # isort: skip  (first: no CUDA/oneDNN start-up lines)

import os

from absl import app, flags

from official_bert.end_to_end_demo import DemoSettings, run_demo
from official_bert.end_to_end_demo_chinese import run_chinese_demo
from official_bert.script_main import run_main

flags.DEFINE_string(
    "output_dir",
    None,
    "Where every stage writes its outputs (default output/demo, for zh output/demo_zh).",
)
flags.DEFINE_enum(
    "lang",
    "en",
    ["en", "zh"],
    "en: the demo of `make demo`. zh: the Chinese samples of samples/zh (docs/chinese.md): "
    "pre-training with jieba whole-word masking, review sentiment and named entities.",
)
flags.DEFINE_enum(
    "init_from",
    "auto",
    ["auto", "minilm", "pretrained"],
    "Fine-tune from all-MiniLM-L6-v2, from the model pre-trained by the demo, or auto: MiniLM "
    "when its wheel is installed.",
)
flags.DEFINE_bool("quick", False, "Fewer steps everywhere (the test suite's mode).")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    settings = DemoSettings.quick() if FLAGS.quick else DemoSettings()
    scripts_dir = os.path.dirname(os.path.abspath(__file__))
    if FLAGS.lang == "zh":
        settings = DemoSettings.chinese(quick=FLAGS.quick)
        if FLAGS.init_from == "minilm":
            raise app.UsageError(
                "--init_from=minilm is an English model; --lang=zh pre-trains its own"
            )
        run_chinese_demo(FLAGS.output_dir or "output/demo_zh", scripts_dir, settings)
        return
    run_demo(
        FLAGS.output_dir or "output/demo",
        scripts_dir=scripts_dir,
        settings=settings,
        init_from=FLAGS.init_from,
    )


if __name__ == "__main__":
    run_main(main)
