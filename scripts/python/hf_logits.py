"""Loads exported models with Hugging Face `transformers` and prints their logits as JSON.

Usage: hf_logits.py TOKENS_JSON DIR...  (TOKENS_JSON: a list of rows of token ids)
Prints {DIR: {"architecture": ..., "shape": [...], "logits": [...]}} for each DIR; exits
non-zero if a model's file lacks a weight the architecture has, or holds one it does not.
"""
import json
import logging
import sys

import numpy as np
from transformers import AutoConfig, FlaxAutoModelForCausalLM


class Complaints(logging.Handler):
    """Keeps what `transformers` warns while loading: a weight missing from the file is
    initialised at random and only warned about, and an unused one is dropped the same way."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def main():
    tokens = np.array(json.load(open(sys.argv[1])), dtype=np.int32)
    complaints = Complaints()
    logging.getLogger("transformers").addHandler(complaints)
    out = {}
    for path in sys.argv[2:]:
        config = AutoConfig.from_pretrained(path)
        complaints.messages.clear()
        model = FlaxAutoModelForCausalLM.from_pretrained(path)
        bad = [m for m in complaints.messages if "were not" in m or "missing" in m]
        if bad:
            sys.exit(f"{path} did not load as written: {bad}")
        logits = np.asarray(model(tokens).logits, dtype=np.float32)
        out[path] = {
            "architecture": config.architectures[0],
            "shape": list(logits.shape),
            "logits": logits.reshape(-1).tolist(),
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
