"""Loads a model `grid-trainer job fetch --hf` wrote, with its tokenizer, in Hugging Face
`transformers`, and samples text from it.

Usage: sample.py DIR PROMPT [TOKENS]
"""
import sys

import numpy as np
from transformers import AutoConfig, FlaxAutoModelForCausalLM, PreTrainedTokenizerFast


def main():
    path, prompt = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 120
    config = AutoConfig.from_pretrained(path)
    model = FlaxAutoModelForCausalLM.from_pretrained(path)
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=f"{path}/tokenizer.json")
    context = config.max_position_embeddings
    ids = tokenizer.encode(prompt)
    rng = np.random.default_rng(0)
    for _ in range(count):
        logits = np.asarray(model(np.array([ids[-context:]], dtype=np.int32)).logits[0, -1])
        # Temperature 0.8 over the tokenizer's vocabulary (the model's may be larger).
        logits = logits[: len(tokenizer)] / 0.8
        p = np.exp(logits - logits.max())
        ids.append(int(rng.choice(len(p), p=p / p.sum())))
    print(f"{config.architectures[0]} from {path}:")
    print(tokenizer.decode(ids))


if __name__ == "__main__":
    main()
