"""The weight initializer of the original BERT."""

import keras


def bert_initializer(initializer_range: float = 0.02) -> keras.initializers.Initializer:
    # The original uses a truncated normal with stddev = initializer_range for every kernel.
    return keras.initializers.TruncatedNormal(stddev=initializer_range)
