#!/usr/bin/env python3
# tok_ref.py — a differential test of the C tokenizer: the contract's section 3 written plainly
# in Python (which has lowercase, NFC/NFD and the categories built in, so it shares nothing with
# the generated tables), run on the same bytes as the C code, outputs compared line by line.
#
# Usage: tok_ref.py KILN_BERT TOK_DUMP VOCAB
#   1. every code point, in lines of consecutive code points with letters, capital sigmas and
#      spaces mixed in: the basic tokenizer's words (tok_dump) must match;
#   2. random lines mixing vocabulary words, accents, punctuation, CJK, Hangul, format
#      characters and invalid bytes: `kiln-bert tokenize` ids must match, with and without
#      --seq-len.
import random
import subprocess
import sys
import unicodedata

CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def is_punct(ch):
    cp = ord(ch)
    return (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126
            or unicodedata.category(ch).startswith("P"))


def basic(text):
    cleaned = []
    for ch in text:  # 1. clean
        cat = unicodedata.category(ch)
        if ch in "\x00\ufffd" or (cat.startswith("C") and ch not in "\t\n\r"):
            continue
        cleaned.append(" " if ch in "\t\n\r" or cat == "Zs" else ch)
    spaced = []
    for ch in cleaned:  # 2. CJK
        cjk = any(lo <= ord(ch) <= hi for lo, hi in CJK)
        spaced.append(" %s " % ch if cjk else ch)
    text = unicodedata.normalize("NFC", "".join(spaced))  # 3.
    out = []
    for word in text.split():
        word = unicodedata.normalize("NFD", word.lower())  # 4.
        word = "".join(c for c in word if unicodedata.category(c) != "Mn")
        cur = ""
        for ch in word:  # 5.
            if is_punct(ch):
                if cur:
                    out.append(cur)
                out.append(ch)
                cur = ""
            else:
                cur += ch
        if cur:
            out.append(cur)
    return out


def wordpiece(word, vocab, unk):
    if len(word) > 100:
        return [unk]
    ids, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                found = vocab[piece]
                break
            end -= 1
        if found is None:
            return [unk]
        ids.append(found)
        start = end
    return ids


def load_vocab(path):
    vocab = {}
    with open(path, encoding="utf-8") as f:  # universal newlines, as the reference reads it
        lines = f.read().split("\n")
    if lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines):
        vocab[line] = i
    return vocab


def row(line_bytes, vocab, seq_len):
    ids = []
    for w in basic(line_bytes.decode("utf-8", "replace")):
        ids.extend(wordpiece(w, vocab, vocab["[UNK]"]))
    if seq_len:
        ids = ids[:seq_len - 2]
    r = [vocab["[CLS]"]] + ids + [vocab["[SEP]"]]
    return r + [vocab["[PAD]"]] * (seq_len - len(r)) if seq_len else r


def all_code_points(rng):
    cps = [c for c in range(0x110000) if c != 0x0A]
    lines = []
    for i in range(0, len(cps), 40):
        chunk = cps[i:i + 40]
        s = ""
        for c in chunk:
            s += chr(c)
            r = rng.random()
            if r < 0.05:
                s += " "
            elif r < 0.10:
                s += "\u03a3"
            elif r < 0.15:
                s += rng.choice("aZ")
        lines.append(s.encode("utf-8", "surrogatepass"))
    return lines


POOL = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,!?'\"-$~+<=>^`|\\")
        + ["\t", "\r", "\f", "\a", "\x00", "\u00a0", "\u2028", "\u200b", "\u00ad", "\ufeff",
           "\u00e9", "e\u0301", "\u00c9", "\u00ef", "\u0130", "\u03a3", "\u03c3", "\u039f",
           "\u0345", "\u0316", "\U0001d165", "\u1fef", "\u4e2d", "\u56fd", "\u3042", "\ud55c",
           "\u201c", "\u201d", "\u00bf", "\u2014", "\u2026", "\u00b7", "\u20ac", "\U0001f600",
           "\uf900", "\u00df", "\ufb01", "\uff21", "\u037e", "\u2126"])
BAD = [b"\xff", b"\xc0\xaf", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80"]


def random_lines(rng, vocab):
    words = [w for w in vocab if not w.startswith("[")]
    lines = []
    for _ in range(3000):
        parts = []
        for _ in range(rng.randrange(0, 25)):
            r = rng.random()
            if r < 0.4:
                w = rng.choice(words)
                parts.append((w[2:] if w.startswith("##") else w).encode())
            elif r < 0.9:
                parts.append(rng.choice(POOL).encode("utf-8", "surrogatepass"))
            else:
                parts.append(rng.choice(BAD))
        lines.append(b"".join(parts))
    lines.insert(5, b"")  # an empty line gives [CLS] [SEP]
    lines.append(b"a" * 101)
    return lines


def run(cmd, data):
    p = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, check=True)
    return p.stdout.decode("utf-8").split("\n")


def compare(what, got, want, inputs):
    bad = [i for i in range(len(want)) if got[i] != want[i]]
    for i in bad[:10]:
        print("FAIL %s line %d: input %r\n  C:      %r\n  Python: %r" % (what, i + 1, inputs[i], got[i], want[i]))
    if len(got) != len(want) + 1 or got[-1] != "":
        print("FAIL %s: %d output lines for %d inputs" % (what, len(got) - 1, len(want)))
        return 1
    return 1 if bad else 0


def main():
    kiln_bert, tok_dump, vocab_path = sys.argv[1:4]
    rng = random.Random(11)
    vocab = load_vocab(vocab_path)
    fails = 0

    lines = all_code_points(rng)
    got = run([tok_dump, vocab_path], b"\n".join(lines) + b"\n")
    want = [" ".join(basic(l.decode("utf-8", "replace"))) for l in lines]
    fails += compare("basic", got, want, lines)

    lines = random_lines(rng, vocab)
    data = b"\n".join(lines)  # the last line has no \n
    for seq_len in (0, 16):
        cmd = [kiln_bert, "tokenize", "--vocab", vocab_path] + (["--seq-len", str(seq_len)] if seq_len else [])
        got = run(cmd, data)
        want = [" ".join(str(i) for i in row(l, vocab, seq_len)) for l in lines]
        fails += compare("ids (seq-len %d)" % seq_len, got, want, lines)
    print("FAILED" if fails else "ok (Unicode %s)" % unicodedata.unidata_version)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
