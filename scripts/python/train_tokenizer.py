"""Trains a byte-level BPE tokenizer on text files and writes its `tokenizer.json`.

Usage: train_tokenizer.py OUT_JSON VOCAB_SIZE TEXT...
Byte-level (GPT-2's pre-tokenizer and decoder), so every text is representable; deterministic
for the same files and size.
"""
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers


def main():
    out, vocab, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train(files, trainer)
    tokenizer.save(out)
    print(f"{out}: {tokenizer.get_vocab_size()} tokens")


if __name__ == "__main__":
    main()
