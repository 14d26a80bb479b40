"""A TF Hub handle as a local SavedModel folder: URLs downloaded (and cached) by tensorflow_hub.

`--hub_module_handle` (and `--bert_hub_module_handle` of run_classifier_with_tfhub.py) takes what
TF Hub users pass: a folder (local, or any file system TensorFlow reads, gs:// included) or an
http(s) URL such as https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4 or a Kaggle
model URL. tensorflow_hub's resolver downloads a URL once into TFHUB_CACHE_DIR (by default a
folder under the system's temporary directory) and gives back that folder; it is imported only
for URLs, since it also imports tf_keras (installed with the project's test extra, which `make
install` installs; a bare `pip install` of the package leaves it out).

The 2018 BERT modules (https://tfhub.dev/google/bert_uncased_L-12_H-768_A-12/1 and its kin, the
ones the original run_classifier_with_tfhub.py used) are in the TF1 Hub format, which TensorFlow
2 can run but not fine-tune as a module (tensorflow.org/hub/model_compatibility); their folders
are read as original checkpoints instead (official_bert/checkpoints/tf1_hub_module.py).
"""

from __future__ import annotations

import os

import tensorflow as tf

from official_bert.checkpoints.hugging_face_hub import is_hugging_face_reference
from official_bert.quiet_import import import_quietly


def resolve_hub_handle(handle: str) -> str:
    """The local (or gs://) folder of `handle`: downloaded and cached by tensorflow_hub when it
    is an http(s) URL, else `handle` itself.

    Raises:
      FileNotFoundError: a folder without saved_model.pb.
    """
    handle = str(handle)
    if is_hugging_face_reference(handle):
        raise ValueError(
            f"{handle} is a Hugging Face model repository, not a TF Hub module: pass it as "
            "--init_checkpoint (its weights are read into this project's encoder)"
        )
    if not handle.startswith(("http://", "https://")):
        if not tf.io.gfile.exists(os.path.join(handle, "saved_model.pb")):
            raise FileNotFoundError(
                f"TF Hub handle {handle}: no saved_model.pb there; expected the folder of a TF "
                "Hub BERT module (TF2 encoder or TF1 Hub format) or an http(s) URL of one"
            )
        return handle
    try:
        # Only here: it imports tf_keras (and pkg_resources).
        tensorflow_hub = import_quietly("tensorflow_hub")
    except ImportError as error:
        raise ImportError(
            f"downloading {handle} needs tensorflow_hub, which needs tf_keras: pip install "
            "tf-keras==2.21.0 (`make install` does), or download the model and pass its "
            f"folder ({error})"
        ) from error
    return tensorflow_hub.resolve(handle)
