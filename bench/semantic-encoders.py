"""Does a better encoder part paraphrases from near misses? The semantic cache's tuning parts
(bench/data/semantic-cache.txt and semantic-cache-tuning-2.txt; the sealed held-out part is not
read): every pair of phrasings within a paraphrase group against every near-miss pair, by the
cosine of MiniLM (the cache's encoder) and of MPNet (the guard's). Prints, per encoder, the chance
that a paraphrase pair is more alike than a near-miss pair, and the share of paraphrase pairs above
the similarity only 2% of near misses reach.

  .venv-guard/bin/python bench/semantic-encoders.py        (after make setup)
"""
import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src" / "guard" / "text"))
from minilm import MiniLm  # noqa: E402
from mpnet import MpNet  # noqa: E402

groups, pairs = [], []
for name in ["semantic-cache.txt", "semantic-cache-tuning-2.txt"]:
    for line in (ROOT / "bench" / "data" / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("G "):
            groups.append([s.strip() for s in line[2:].split("|")][1:])
        elif line.startswith("N "):
            first, second = (half.split("|") for half in line[2:].split("||"))
            pairs.append((first[1].strip(), second[1].strip()))
texts = sorted({t for g in groups for t in g} | {t for p in pairs for t in p})
at = {t: i for i, t in enumerate(texts)}

minilm = MiniLm(2)
mpnet = MpNet(ROOT / ".cache" / "guard" / "mpnet", 2)
encoders = {
    "MiniLM": minilm.read_questions(texts)[0],
    "MPNet": mpnet.embed([[mpnet.cls] + mpnet.ids(t)[:254] + [mpnet.sep] for t in texts]),
}
for name, vectors in encoders.items():
    alike = lambda a, b: float(vectors[at[a]] @ vectors[at[b]])  # noqa: E731
    paraphrases = np.array([alike(a, b) for g in groups for a, b in itertools.combinations(g, 2)])
    near_misses = np.array([alike(a, b) for a, b in pairs])
    order = (paraphrases[:, None] > near_misses[None, :]).mean()
    bar = np.quantile(near_misses, 0.98)
    print(f"{name}: {len(paraphrases)} paraphrase pairs, {len(near_misses)} near-miss pairs; "
          f"P(paraphrase more alike) {order:.3f}; above the near misses' 98th percentile ({bar:.3f}): {np.mean(paraphrases > bar):.3f}")
