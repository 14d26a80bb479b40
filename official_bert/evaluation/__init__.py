"""Metrics that need more than Keras: GLUE (MCC, F1, Pearson/Spearman), SQuAD, CMRC 2018."""
