"""Fine-tunes the top layers of the guard's encoder on the labelled training sets, then writes the
int8 graph from the tuned weights (build_encoder.write_encoder). Run once at setup:

  finetune.py BASE_DIR OUT_DIR JSONL...     BASE_DIR: all-mpnet-base-v2 as it ships (fp32)

Why: the encoder as it ships was trained to tell topics apart, not intent, and the heads over it
could not learn what it does not show. Tuning its top TOP layers with the heads' network on top
lifted short-request recall (0.72 -> 0.95 at the same look-alike rate) and run-on separation (AUC
0.57 -> 0.89) in a probe on the training sets alone (README, "Fine-tuning the encoder"); six of
twelve layers did better than two or all twelve. The network trained here is thrown away:
guard_worker.py fits the heads anew on the tuned encoder, as on any encoder.

What it reads: the short labelled texts outside the threshold part (tuning_data.py; the
thresholds are chosen there), and run-on windows built from them. The lower layers stay as they
ship, so their output is computed once; the tuned layers, the network (AdamW: 2e-5 for the layers,
1e-3 for the network, batches of 32 texts of like length, class-balanced loss as in heads.py) then
run EPOCHS times over it from seeded starts.
"""
import json
import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

from build_encoder import HEADS, HEAD_SIZE, HIDDEN, LAYERS, EPSILON, read_safetensors, write_encoder
from heads import CODES, targets
from mpnet import PAD, relative_buckets
from tokenizers import Tokenizer
from tuning_data import SEED, run_on_windows, tuning_rows

TOP = 6
EPOCHS = 3
WINDOW_TOKENS = 62  # the guard's window less <s> and </s> (guard_worker.WINDOW)
BATCH = 32
NETWORK = 256  # the heads' hidden layer (heads.HIDDEN)
PARTS = {"qw": "attention.attn.q.weight", "qb": "attention.attn.q.bias", "kw": "attention.attn.k.weight",
         "kb": "attention.attn.k.bias", "vw": "attention.attn.v.weight", "vb": "attention.attn.v.bias",
         "ow": "attention.attn.o.weight", "ob": "attention.attn.o.bias", "n1s": "attention.LayerNorm.weight",
         "n1b": "attention.LayerNorm.bias", "iw": "intermediate.dense.weight", "ib": "intermediate.dense.bias",
         "dw": "output.dense.weight", "db": "output.dense.bias", "n2s": "output.LayerNorm.weight", "n2b": "output.LayerNorm.bias"}


def norm(x, scale, shift):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + EPSILON) * scale + shift


def layer(p, h, bias):
    """One transformer layer, as build_encoder.layers_graph writes it (in fp32 here)."""
    b, t, _ = h.shape
    split = lambda x: x.reshape(b, t, HEADS, HEAD_SIZE).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = (split(h @ p[w].T + p[bias_]) for w, bias_ in (("qw", "qb"), ("kw", "kb"), ("vw", "vb")))
    mixed = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) * HEAD_SIZE ** -0.5 + bias, -1) @ v
    attended = norm(mixed.transpose(0, 2, 1, 3).reshape(b, t, HIDDEN) @ p["ow"].T + p["ob"] + h, p["n1s"], p["n1b"])
    inner = jax.nn.gelu(attended @ p["iw"].T + p["ib"], approximate=False)
    return norm(inner @ p["dw"].T + p["db"] + attended, p["n2s"], p["n2b"])


class Encoder:
    def __init__(self, weights):
        self.weights = weights
        self.layers = [{k: jnp.asarray(weights[f"encoder.layer.{i}.{name}"]) for k, name in PARTS.items()} for i in range(LAYERS)]
        self.relative_bias = jnp.asarray(weights["encoder.relative_attention_bias.weight"])
        self.lower = jax.jit(self._lower)

    def bias(self, mask):
        buckets = relative_buckets(mask.shape[1])
        return self.relative_bias[buckets].transpose(2, 0, 1)[None] + (mask[:, None, None, :] - 1) * 1e9

    def _lower(self, ids, mask):
        """The layers left as they ship: their output, once per text."""
        w = self.weights
        positions = jnp.cumsum(mask, 1) * mask + PAD
        x = norm(jnp.asarray(w["embeddings.word_embeddings.weight"])[ids] + jnp.asarray(w["embeddings.position_embeddings.weight"])[positions],
                 jnp.asarray(w["embeddings.LayerNorm.weight"]), jnp.asarray(w["embeddings.LayerNorm.bias"]))
        bias = self.bias(mask)
        for p in self.layers[:LAYERS - TOP]:
            x = layer(p, x, bias)
        return x

    def upper(self, top, h, mask):
        """The tuned layers, then the mean over the mask, L2-normalised, as mpnet.py reads a text."""
        bias = self.bias(mask)
        for p in top:
            h = layer(p, h, bias)
        m = mask[..., None].astype(h.dtype)
        pooled = (h * m).sum(1) / jnp.maximum(m.sum(1), 1e-9)
        return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)

    def tuned_weights(self, top):
        weights = dict(self.weights)
        for i, p in zip(range(LAYERS - TOP, LAYERS), top):
            weights.update({f"encoder.layer.{i}.{name}": np.asarray(p[k], np.float32) for k, name in PARTS.items()})
        return weights


def batches(windows):
    """Windows of like length together, padded to a multiple of 16 tokens (few shapes to compile)."""
    order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
    for start in range(0, len(order), BATCH):
        chosen = order[start:start + BATCH]
        width = int(math.ceil(max(len(windows[i]) for i in chosen) / 16) * 16)
        ids, mask = np.full((len(chosen), width), PAD, np.int32), np.zeros((len(chosen), width), np.int32)
        for row, i in enumerate(chosen):
            ids[row, :len(windows[i])], mask[row, :len(windows[i])] = windows[i], 1
        yield chosen, ids, mask


def network(key):
    first, second = jax.random.split(key)
    return {"w1": jax.random.normal(first, (HIDDEN, NETWORK)) * np.sqrt(2 / HIDDEN), "b1": jnp.zeros(NETWORK),
            "w2": jax.random.normal(second, (NETWORK, len(CODES) + 1)) * np.sqrt(1 / NETWORK), "b2": jnp.zeros(len(CODES) + 1)}


def main(base_dir, out_dir, paths):
    tokenizer = Tokenizer.from_file(f"{base_dir}/tokenizer.json")
    tokenizer.no_padding()
    tokenizer.no_truncation()
    cls, sep = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    ids_of = lambda text: tokenizer.encode(text).ids[1:-1]  # noqa: E731
    rows = [json.loads(line) for path in paths for line in open(path, encoding="utf-8") if line.strip()]
    extra = run_on_windows(rows, ids_of, WINDOW_TOKENS)
    rows = tuning_rows(rows)
    windows = [[cls] + ids_of(r["text"])[:WINDOW_TOKENS] + [sep] for r in rows] + [[cls] + w + [sep] for w, _ in extra]
    rows += [row for _, row in extra]
    print(f"fine-tuning the guard encoder's top {TOP} layers on {len(windows)} texts and windows, {EPOCHS} epochs", flush=True)

    encoder = Encoder(read_safetensors(f"{base_dir}/model.safetensors"))
    y, taught = targets(rows)
    positives, negatives = (y * taught).sum(0), ((1 - y) * taught).sum(0)
    weight = np.where(y == 1, 0.5 / np.maximum(positives, 1), 0.5 / np.maximum(negatives, 1)) * taught * len(rows)
    data = [(np.asarray(encoder.lower(ids, mask)), mask, y[chosen], weight[chosen]) for chosen, ids, mask in batches(windows)]

    def loss(params, h, mask, yb, wb):
        e = encoder.upper(params["top"], h, mask)
        net = params["network"]
        z = jnp.maximum(e @ net["w1"] + net["b1"], 0) @ net["w2"] + net["b2"]
        return (wb * (jnp.maximum(z, 0) - z * yb + jnp.log1p(jnp.exp(-jnp.abs(z))))).sum() / len(yb)  # weighted cross-entropy

    params = {"top": encoder.layers[LAYERS - TOP:], "network": network(jax.random.PRNGKey(SEED))}
    label = lambda name: jax.tree_util.tree_map(lambda _: name, params[name])  # noqa: E731
    optimiser = optax.multi_transform({"top": optax.adamw(2e-5, weight_decay=0.01), "network": optax.adamw(1e-3, weight_decay=1e-4)},
                                      {"top": label("top"), "network": label("network")})
    state = optimiser.init(params)

    @jax.jit
    def step(params, state, h, mask, yb, wb):
        value, gradients = jax.value_and_grad(loss)(params, h, mask, yb, wb)
        updates, state = optimiser.update(gradients, state, params)
        return optax.apply_updates(params, updates), state, value

    order = np.random.default_rng(SEED)
    for epoch in range(EPOCHS):
        total = 0.0
        for b in order.permutation(len(data)):
            params, state, value = step(params, state, *data[b])
            total += float(value)
        print(f"  epoch {epoch + 1}: loss {total / len(data):.4f}", flush=True)
    write_encoder(encoder.tuned_weights(params["top"]), out_dir)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
