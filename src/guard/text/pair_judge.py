"""A judge of two questions for the semantic cache: how likely they want the same answer. Built by
scripts/install-semantic-judge.sh and read by the ceiling bench (BENCH_CROSS_ENCODER=1); served by
the cache on 28 November and taken out again (README, "The semantic layer"), so not in the setup.

  pair_judge.py fit JUDGE_DIR PAIRS.json     after train_pair_judge.py: fits the combination on
                                             the calibration third, writes JUDGE_DIR/combination.json

Its reading of a pair combines, in a logistic judge, what the cache's sentence encoder sees
(minilm.py: the sentences' cosine, and how their word pieces align: the worst and the
mean of every piece's best match in the other text) with the cross-encoder that reads both
questions together (train_pair_judge.py: its logit, the mean of both orders). The features were
fixed before any result (28 November): the cross-encoder alone ranks some sets' pairs worse than
the cosine does, the combination better than either on every tuning-free set of the ceiling bench.
The combination is fitted on the tuning pairs the cross-encoder never trained on (103 paraphrase
pairs, 56 near misses), those the candidate filter stops included: the filter lets through 6 of
those near misses, too few to fit on, and the ones it stops are the hardest for a judge (a city
or a number changed); ridge 1 on standardised features, no weight below zero (fit_monotone).
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from minilm import MiniLm

THREADS = int(os.environ.get("GUARD_THREADS", "2"))

FEATURES = ["cosine", "alignment worst", "alignment mean", "cross-encoder"]
MAX_TOKENS = 128  # per pair, as it was trained


def alignment(a, b):
    """The worst and the mean of every word piece's best cosine in the other text (unit rows)."""
    if len(a) == 0 or len(b) == 0:
        return -1.0, -1.0
    alike = a @ b.T
    best = np.concatenate([alike.max(1), alike.max(0)])
    return float(best.min()), float(best.mean())


class PairJudge:
    def __init__(self, judge_dir, read_questions, threads):
        """read_questions(texts) -> (sentence vectors, word pieces' vectors): the cache's encoder
        (minilm.MiniLm.read_questions)."""
        judge_dir = Path(judge_dir)
        self.read_questions = read_questions
        self.tokenizer = Tokenizer.from_file(str(judge_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tables = dict(np.load(judge_dir / "judge.npz"))
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        self.session = ort.InferenceSession(str(judge_dir / "judge.onnx"), options, providers=["CPUExecutionProvider"])
        combination = judge_dir / "combination.json"
        self.combination = json.loads(combination.read_text()) if combination.exists() else None

    def cross_logits(self, pairs, both_orders=True):
        """Per (a, b): the cross-encoder's logit, the mean of both orders, in one batch; or of
        (a, b) alone, half the cost."""
        encoded = [self.tokenizer.encode(a, b) for a, b in pairs]
        if both_orders:
            encoded += [self.tokenizer.encode(b, a) for a, b in pairs]
        if not encoded:
            return np.zeros(0)
        width = max(len(e.ids) for e in encoded)
        ids, types, mask = (np.zeros((len(encoded), width), np.int64) for _ in range(3))
        for row, e in enumerate(encoded):
            ids[row, :len(e.ids)], types[row, :len(e.ids)], mask[row, :len(e.ids)] = e.ids, e.type_ids, 1
        t = self.tables
        x = t["words"][ids] + t["positions"][:width][None] + t["types"][types]
        mean = x.mean(-1, keepdims=True)
        x = ((x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-12) * t["ns"] + t["nb"]).astype(np.float32)
        bias = np.broadcast_to(((mask[:, None, None, :] - 1.0) * 1e9).astype(np.float32), (len(encoded), 12, width, width))
        last = self.session.run(None, {"hidden": x, "bias": np.ascontiguousarray(bias)})[0]
        logits = np.tanh(last[:, 0] @ t["h1"] + t["h1b"]) @ t["h2"] + t["h2b"]
        return (logits[:len(pairs)] + logits[len(pairs):]) / 2 if both_orders else logits

    def features(self, pairs):
        """Per pair, FEATURES."""
        cross = self.cross_logits(pairs)
        texts = sorted({t for pair in pairs for t in pair})
        vectors, pieces = self.read_questions(texts)
        at = {t: i for i, t in enumerate(texts)}
        rows = []
        for (a, b), c in zip(pairs, cross):
            i, j = at[a], at[b]
            rows.append([float(vectors[i] @ vectors[j]), *alignment(pieces[i], pieces[j]), float(c)])
        return np.array(rows, dtype=float).reshape(len(pairs), len(FEATURES))


def combined_logit(combination, X):
    """The logistic judge's logit of each row of features, as fit() or fit_monotone() fitted it."""
    return ((X - combination["mean"]) / combination["sd"]) @ combination["weights"] + combination["intercept"]


def fit_monotone(X, y):
    """fit(), with no weight below zero: a pair is never judged less likely the same question for
    being more alike by any feature. The fitted pairs are all alike (paraphrases and near misses),
    so a free fit may weigh one of two correlated features negatively, and a pair far less alike
    than any it saw (two unrelated questions in one semantic key) would then score high. A feature
    whose weight comes out negative is dropped (the most negative first) and the rest refitted."""
    kept = list(range(X.shape[1]))
    while True:
        fitted = fit(X[:, kept], y)
        worst = int(np.argmin(fitted["weights"]))
        if fitted["weights"][worst] >= 0:
            break
        del kept[worst]
    full = {"mean": X.mean(0).tolist(), "sd": (X.std(0) + 1e-9).tolist(), "intercept": fitted["intercept"], "weights": [0.0] * X.shape[1]}
    for at, feature in enumerate(kept):
        full["mean"][feature], full["sd"][feature], full["weights"][feature] = fitted["mean"][at], fitted["sd"][at], fitted["weights"][at]
    return full


def fit(X, y, ridge=1.0):
    """Logistic regression by Newton's method on standardised features."""
    mean, sd = X.mean(0), X.std(0) + 1e-9
    Z = np.c_[np.ones(len(X)), (X - mean) / sd]
    w, penalty = np.zeros(Z.shape[1]), ridge * np.diag(np.r_[0, np.ones(Z.shape[1] - 1)])
    for _ in range(50):
        p = 1 / (1 + np.exp(-Z @ w))
        w -= np.linalg.solve(Z.T @ (Z * (p * (1 - p))[:, None]) + penalty, Z.T @ (p - y) + penalty @ w)
    return {"mean": mean.tolist(), "sd": sd.tolist(), "intercept": float(w[0]), "weights": w[1:].tolist()}


def fit_combination(judge_dir, pairs_file):
    from train_pair_judge import calibration  # setup only: it loads JAX
    pairs = [p for p in json.loads(Path(pairs_file).read_text())
             if p["set"] == "tuning" and calibration(p)]
    judge = PairJudge(judge_dir, MiniLm(THREADS).read_questions, THREADS)
    X = judge.features([(p["a"], p["b"]) for p in pairs])
    y = np.array([float(p["paraphrase"]) for p in pairs])
    combination = {"features": FEATURES, **fit_monotone(X, y)}
    combination["fittedOn"] = {"paraphrases": int(y.sum()), "nearMisses": int(len(y) - y.sum())}
    (Path(judge_dir) / "combination.json").write_text(json.dumps(combination, indent=2) + "\n")
    print(f"the judge's combination fitted on {int(y.sum())} paraphrase pairs and {int(len(y) - y.sum())} near misses: "
          + ", ".join(f"{n} {w:+.2f}" for n, w in zip(FEATURES, combination["weights"])))


if __name__ == "__main__":
    if sys.argv[1] == "fit":
        fit_combination(sys.argv[2], sys.argv[3])
