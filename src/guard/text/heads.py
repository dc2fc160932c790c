"""The guard's heads: one small network over a span's embedding, an output per head.

Output 0 is the "harmful" head (harmful requests of any code against safe texts, look-alikes
included), outputs 1..14 the codes' heads. They share one hidden layer of HIDDEN rectified units:
a code's head can then use what the others learn (S8's 45 training texts are few for 768
features), and the network can draw a boundary that is not a plane. Logistic heads, one plane each,
were the guard's until 26 November; in 5-fold cross-validation on the training sets this network
caught more (recall 0.761 -> 0.788, the weakest code's 0.556 -> 0.64) with each kind of safe text
held to 3% (README, "The heads"). HIDDEN, L2, STEPS and LEARNING_RATE were chosen there, among
256 and 512 units and ridges 1e-5..1e-3, and on nothing held out.

Each output's loss is class-balanced (its positives and its negatives weigh half each), and a
harmful text whose source names no code ("unlabelled") teaches the harmful head only: to a code
head it would be a negative it may not be. Trained full-batch by Adam from a seeded start, so a
fit is the same each time on the same machine.
"""
import numpy as np

CODES = ["S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9", "S10", "S11", "S12", "S13", "S14"]
HIDDEN = 256
L2 = 1e-4  # ridge on both layers' weights
STEPS = 600
LEARNING_RATE = 3e-3
SEED = 0


def targets(rows):
    """Per row, what each output should say (harmful, S1..S14), and which outputs it teaches."""
    y = np.array([[1.0 if r["codes"] else 0.0] + [1.0 if c in r["codes"] else 0.0 for c in CODES] for r in rows], np.float32)
    taught = np.ones_like(y)
    taught[[i for i, r in enumerate(rows) if "unlabelled" in r["codes"]], 1:] = 0.0
    return y, taught


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))  # exp would overflow for a large negative z


def fit_heads(x, rows):
    """The network's weights, fitted on embeddings `x` (one row each of `rows`)."""
    x = np.asarray(x, np.float32)
    y, taught = targets(rows)
    positives, negatives = (y * taught).sum(0), ((1 - y) * taught).sum(0)
    weight = np.where(y == 1, 0.5 / np.maximum(positives, 1), 0.5 / np.maximum(negatives, 1)) * taught
    rng = np.random.default_rng(SEED)
    d, outputs = x.shape[1], y.shape[1]
    params = [rng.normal(0, np.sqrt(2 / d), (d, HIDDEN)).astype(np.float32), np.zeros(HIDDEN, np.float32),
              rng.normal(0, np.sqrt(1 / HIDDEN), (HIDDEN, outputs)).astype(np.float32), np.zeros(outputs, np.float32)]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    for step in range(1, STEPS + 1):
        w1, b1, w2, b2 = params
        before = x @ w1 + b1
        hidden = np.maximum(before, 0)
        error = weight * (sigmoid(hidden @ w2 + b2) - y)  # the gradient of the weighted cross-entropy
        back = (error @ w2.T) * (before > 0)
        gradients = (x.T @ back + L2 * w1, back.sum(0), hidden.T @ error + L2 * w2, error.sum(0))
        for i, g in enumerate(gradients):
            first[i] = 0.9 * first[i] + 0.1 * g
            second[i] = 0.999 * second[i] + 0.001 * g * g
            params[i] -= LEARNING_RATE * (first[i] / (1 - 0.9 ** step)) / (np.sqrt(second[i] / (1 - 0.999 ** step)) + 1e-8)
    return {"w1": params[0], "b1": params[1], "w2": params[2], "b2": params[3]}


def scores_of(x, heads):
    """Per row of `x`, the scores of the harmful head and of each code's head (in float64: a float32
    score rounded to 4 places is no such decimal, and would show as 0.9731000065803528 in a verdict)."""
    hidden = np.maximum(np.asarray(x, np.float32) @ heads["w1"] + heads["b1"], 0)
    return sigmoid(hidden @ heads["w2"] + heads["b2"]).astype(np.float64)


def to_json(heads):
    return {name: value.tolist() for name, value in heads.items()}


def from_json(saved):
    return {name: np.array(value, np.float32) for name, value in saved.items()}
