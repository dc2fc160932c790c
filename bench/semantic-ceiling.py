"""The judging half of bench/semantic-ceiling.bench.ts (which writes the pairs and runs this).

Each pair's features: the sentence cosine by MiniLM (the cache's encoder) and by MPNet (the
guard's); how MiniLM's word pieces align (every piece's best match in the other text: the worst
two, the mean, and apart for the shorter and the longer text, as a paraphrase often adds words a
near miss does not); the length difference; and the candidate filter's two verdicts. A logistic
judge (ridge 1, standardised features, fixed before any result) is fitted on some sets, and its
threshold set where 2% of those sets' near misses pass (δ = 0.02); it is then read on a set it
never saw. Also each single score with its threshold chosen the same way, and "the set's own
threshold" (chosen on the test set itself: a ceiling no judge can know).

With JUDGE_DIR (pair_judge.py's judge, built by scripts/install-semantic-judge.sh), its
cross-encoder's score is read alone and as one more feature, the judge as it was served on 28
November (its own combination), and a judge within a miss's budget: every feature but MPNet's
cosine, with the cross-encoder read on one order (29 November, fixed before its first run).
The cross-encoder was trained on two thirds of the tuning parts, so wherever it counts, the tuning
parts stand for their calibration third alone (the pairs it never saw).

  .venv-guard/bin/python bench/semantic-ceiling.py PAIRS.json OUT.json [JUDGE_DIR]
"""
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src" / "guard" / "text"))
from minilm import MiniLm  # noqa: E402
from mpnet import MpNet  # noqa: E402
from pair_judge import BUDGET_DIRECTIONS, THREADS, PairJudge, budget_features, combined_logit, fit as fit_combination, fit_monotone  # noqa: E402
from train_pair_judge import calibration  # noqa: E402

DELTA = 0.02
pairs = json.loads(Path(sys.argv[1]).read_text())
texts = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
at = {t: i for i, t in enumerate(texts)}
minilm = MiniLm(THREADS)
vectors, pieces = minilm.read_questions(texts)
mpnet = MpNet(ROOT / ".cache" / "guard" / "mpnet", 2)
mp_vectors = mpnet.embed([[mpnet.cls] + mpnet.ids(t)[:254] + [mpnet.sep] for t in texts])

NAMES = ["cosine", "mpnet cosine", "alignment worst", "alignment second worst", "alignment mean", "shorter: worst",
         "shorter: mean", "shorter: pieces under 0.6", "longer: worst", "longer: mean", "longer: pieces under 0.6",
         "pieces more in the longer", "same fixed terms", "words apart"]


def features(p):
    i, j = at[p["a"]], at[p["b"]]
    cheap = budget_features(vectors[i], pieces[i], vectors[j], pieces[j], p["sameFixedTerms"], p["wordsApart"])
    return cheap[:1] + [mp_vectors[i] @ mp_vectors[j]] + cheap[1:]


X = np.array([features(p) for p in pairs], dtype=float)
y = np.array([p["paraphrase"] for p in pairs], dtype=float)
sets = np.array([p["set"] for p in pairs])
judge = PairJudge(sys.argv[3], minilm.read_questions, THREADS) if len(sys.argv) > 3 else None
if judge:
    judged = judge.features([(p["a"], p["b"]) for p in pairs])
    cross = judged[:, -1]
    # What a miss could afford (a cache's 10 ms): no MPNet, the cross-encoder on one order, the
    # pair as listed (the earlier phrasing first; it was trained on both orders).
    cheap = np.c_[np.delete(X, NAMES.index("mpnet cosine"), axis=1), judge.cross_logits([(p["a"], p["b"]) for p in pairs], both_orders=False)]
    served = combined_logit(judge.combination, judged)
    never_trained = np.array([calibration(p) or p["set"] != "tuning" for p in pairs])
SETS = ["tuning"] + sorted({s for s in sets if s != "tuning"}, reverse=True)


def fit(X, y):
    """The logistic judge (pair_judge.fit: ridge 1, standardised features); returns the scoring function."""
    c = fit_combination(X, y)
    return lambda X2: combined_logit(c, X2)


def threshold(near_miss_scores):
    """The score above which at most δ of these near misses lie."""
    ordered = np.sort(near_miss_scores)
    return ordered[len(ordered) - int(DELTA * len(ordered)) - 1]


def read(score, train, test):
    thr = threshold(score[train & (y == 0)])
    para, near = score[test & (y == 1)], score[test & (y == 0)]
    wrong = int(np.sum(near > thr))
    return {"paraphrases": round(float(np.mean(para > thr)), 3), "nearMissesPassed": wrong, "nearMisses": len(near),
            "setsOwnThreshold": round(float(np.mean(para > threshold(near))), 3),
            "auc": round(float((para[:, None] > near[None, :]).mean()), 3)}


filtered = (X[:, NAMES.index("same fixed terms")] == 1) & (X[:, NAMES.index("words apart")] == 0)
rows = {}
for test in SETS[1:]:
    for trained_on in (["tuning"], [s for s in SETS if s != test]):
        train, k = np.isin(sets, trained_on), sets == test
        name = f"{test}, fitted on {' + '.join(trained_on)}"
        rows[name] = {
            "today's judge: the filter, then the worst alignment": read(np.where(filtered, X[:, 2], -9.0), train, k),
            "MiniLM cosine alone": read(X[:, 0], train, k),
            "MPNet cosine alone": read(X[:, 1], train, k),
            "logistic judge on every feature": read(fit(X[train], y[train])(X), train, k),
        }
        if judge:
            seen = train & never_trained
            with_cross = np.c_[X, cross]
            rows[name]["the cross-encoder alone"] = read(cross, seen, k)
            rows[name]["logistic judge on every feature and the cross-encoder"] = read(fit(with_cross[seen], y[seen])(with_cross), seen, k)
            rows[name]["the served judge (as fitted at setup)"] = read(served, seen, k)
            rows[name]["logistic judge without MPNet, the cross-encoder one order"] = read(fit(cheap[seen], y[seen])(cheap), seen, k)
            # As the cache serves it (CACHE_JUDGE=budget): no weight against its feature's direction.
            monotone = fit_monotone(cheap[seen], y[seen], BUDGET_DIRECTIONS)
            rows[name]["the budget judge as served (no weight against its direction)"] = read(combined_logit(monotone, cheap), seen, k)


def timing(calls=40):
    """What the budget judge adds to a miss, beside what a miss already pays: per call, the
    median time of the cache's embedding of one question, and of the cross-encoder on one pair in
    one order (sequential calls, each a pair of the sets in a seeded draw)."""
    draw = np.random.default_rng(29)
    chosen = [pairs[i] for i in draw.choice(len(pairs), calls, replace=False)]
    medians = {}
    for name, call in (("embedding", lambda p: minilm.read_questions([p["a"]])),
                       ("cross-encoder, one pair, one order", lambda p: judge.cross_logits([(p["a"], p["b"])], both_orders=False))):
        call(chosen[0])  # warm
        times = []
        for p in chosen:
            start = time.perf_counter()
            call(p)
            times.append((time.perf_counter() - start) * 1000)
        medians[name] = round(float(np.median(times)), 2)
    return {"calls": calls, "medianMs": medians, "ratio": round(medians["cross-encoder, one pair, one order"] / medians["embedding"], 2)}


result = {"delta": DELTA, "pairs": {s: {"paraphrase": int(np.sum((sets == s) & (y == 1))), "nearMiss": int(np.sum((sets == s) & (y == 0)))} for s in SETS},
          "features": NAMES + (["cross-encoder"] if judge else []), "rows": rows}
if judge:
    result["timing"] = timing()
    print(f"timing: {result['timing']}")
Path(sys.argv[2]).write_text(json.dumps(result, indent=2) + "\n")
for name, judges in rows.items():
    print(name)
    for judge, r in judges.items():
        print(f"  {judge:55s} paraphrases {r['paraphrases']:.0%}, near misses {r['nearMissesPassed']}/{r['nearMisses']},"
              f" set's own threshold {r['setsOwnThreshold']:.0%}, AUC {r['auc']:.3f}")
