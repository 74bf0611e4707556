"""kbtest.py — what the kiln-bert end-to-end tests share: a check that counts failures instead
of stopping at the first, and the synthetic aclImdb-layout reviews they train on (two
sentences of the test vocabulary that differ in words, so a model tells them apart within a few
steps; each review ends in its index, so no two are the same text)."""
import os

POS = "the movie was great ! i love it , great great"
NEG = "the movie was naive . i want un ##want walk"


class Checks:
    """check(cond, what) prints FAIL and counts; .fails is the count."""

    def __init__(self):
        self.fails = 0

    def __call__(self, cond, what):
        if not cond:
            print("FAIL", what)
            self.fails += 1


def write_reviews(root, per_label, split="train"):
    """root/split/pos and neg, per_label reviews each, named I_5.txt."""
    for label, text in (("pos", POS), ("neg", NEG)):
        d = os.path.join(root, split, label)
        os.makedirs(d, exist_ok=True)
        for i in range(per_label):
            with open(os.path.join(d, f"{i}_5.txt"), "w") as f:
                f.write(f"{text} {i}\n")
