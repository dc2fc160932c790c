"""Prices a variant of the text guard's heads at the threshold part, judged as serving judges, without
building it. For each set of heads the setup's own fit runs (guard_worker.py train, on the sets the
Makefile names), with the variant's extra rows, and stops once its thresholds are chosen; the heads
that fit chose them with (fitted on the rest of the training sets) then judge every threshold-part
text and evasion form the way a request is judged: a text of one window by the one-window heads, a
longer one by its spans and their words (Encoder.by_words), both sets of heads agreeing.

  make price-guard PRICE='OUT.json [options]'      (after make setup)
  --run-on SIZE:REQUEST_TOKENS[:lookalike]   the heads also learn the fine-tuning's run-on windows
                                             (tuning_data.py) of SIZE tokens, requests cut to
                                             REQUEST_TOKENS; ":lookalike": their harmless talk drawn
                                             from look-alikes alone, not plain texts too (repeatable)
  --repeat K                                 those windows K times: a weight, each head's classes
                                             still balanced
  --lookalike-fragments K                    the heads fit each sentence of a look-alike K times (its
                                             copies judged as no kind, so no rate counts them twice)
  --pooling mean+max                         a span's embedding is its token vectors' mean and their
                                             maximum, each L2-normalised, side by side (1,536 numbers):
                                             a request amid talk may show in the maximum when the mean
                                             averages it away; heads fitted and served on it
  --serve-windows N                          serving also reads a piece longer than a window in
                                             windows of N tokens sliding by N/2
  --serve-clauses                            serving also reads a piece longer than a window by its
                                             clauses (clauses_of)
  --context-gate G                           a longer text's span matches only when its context (the
                                             span amid its neighbours, a window's worth centred on it)
                                             also passes the one-window heads at harmful G and that
                                             code's threshold (in_context)
  --scores FILE                              also writes every priced text's spans' scores, by group
                                             (per span, per judge: [harmful, S1, ..., S14]), so rules
                                             on them can be priced without fitting again

With no option it replays the build, and says whether it chose the heads files' thresholds: the
check that what it prices is what the setup fits. Embeddings are kept by window, per encoder, in
.cache/guard/price-embeddings-*.npz, so a second variant reads only its new windows; the fits are
kept in .cache/guard/price-fits-*.json, by all they depend on, so a variant of serving alone
refits nothing. A variant of serving alone takes seconds once its windows are kept, one that fits
about a minute, and the first run some minutes more to embed its windows.
"""
import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src/guard/text"))
import guard_worker as gw  # noqa: E402
import tuning_data  # noqa: E402
import mpnet  # noqa: E402
from batching import mean_pooled  # noqa: E402
from heads import from_json, scores_of, to_json  # noqa: E402

GUARD = Path(".cache/guard")
FIT_OPTIONS = ("run_on", "repeat", "lookalike_fragments", "pooling")  # what the heads are fitted on: the kept fits' key
VARIANT_OPTIONS = FIT_OPTIONS + ("serve_windows", "serve_clauses", "context_gate")  # none given: the build
FITS = ("whole", "spans")  # guard_worker.READINGS: each reading's heads, and the file the build wrote them to
BUILT = {"whole": GUARD / "heads.json", "spans": GUARD / "heads-spans.json"}


class Stopped(Exception):
    """Raised once the fit has chosen its thresholds: the final fit on every row is not needed."""


class Embeddings:
    """The encoder's embeddings, by window, kept between runs in `path`; new windows read shortest
    first, so a batch pads little."""

    def __init__(self, path, embed):
        self.path, self.embed, self.known = path, embed, {}
        if path.exists():
            saved = np.load(path)
            self.known = dict(zip(saved["keys"].tolist(), saved["vectors"]))

    def __call__(self, windows):
        keys = [hashlib.sha1(np.asarray(w, np.int32).tobytes()).hexdigest() for w in windows]
        new = dict((k, w) for k, w in zip(keys, windows) if k not in self.known)
        if new:
            order = sorted(new, key=lambda k: len(new[k]))
            self.known.update(zip(order, self.embed([new[k] for k in order])))
            np.savez(self.path, keys=np.array(list(self.known)), vectors=np.stack(list(self.known.values())))
        return np.stack([self.known[k] for k in keys]) if keys else np.zeros((0, 768), np.float32)


def extra_run_on(variant):
    """guard_worker's run_on_windows, with the variant's windows after the build's."""
    built, request_tokens = gw.run_on_windows, tuning_data.REQUEST_TOKENS

    def windows(rows, ids_of, size):
        extra = []
        for spec in variant.run_on:
            window, request, *talk = spec.split(":")
            source = [r for r in rows if r["codes"] or r["kind"] == "lookalike"] if talk == ["lookalike"] else rows
            tuning_data.REQUEST_TOKENS = int(request)
            try:
                extra += tuning_data.run_on_windows(source, ids_of, int(window))
            finally:
                tuning_data.REQUEST_TOKENS = request_tokens
        return built(rows, ids_of, size) + extra * variant.repeat
    return windows


def mean_and_max_pooled(hidden, mask):
    """batching.mean_pooled beside the maximum of each window's token vectors over its mask, L2-normalised."""
    peak = np.where(mask[:, :, None] > 0, hidden, -np.inf).max(1)
    return np.concatenate([mean_pooled(hidden, mask), peak / np.linalg.norm(peak, axis=1, keepdims=True)], 1)


def weighted_fragments(variant):
    """guard_worker's fragments, each of a look-alike's also K - 1 times more as a row of no safe kind."""
    built = gw.fragments

    def fragments(row):
        rows = built(row)
        copies = [{**r, "kind": "window"} for r in rows] if row["kind"] == "lookalike" else []
        return rows + copies * (variant.lookalike_fragments - 1)
    return fragments


def fit_out_of_fold(sets, heads_only, forms, variant):
    """The thresholds the fit chooses, and the heads it chose them with (fitted outside the threshold part)."""
    built = {name: getattr(gw, name) for name in ("run_on_windows", "choose_thresholds", "fit_heads", "fragments")}
    found = {}

    def fit(x, rows):
        found.setdefault("heads", built["fit_heads"](x, rows))  # the first fit: the one choose_thresholds judges with
        return found["heads"]

    def choose(*args):
        found["chosen"] = built["choose_thresholds"](*args)
        raise Stopped

    gw.run_on_windows, gw.choose_thresholds, gw.fit_heads, gw.fragments = extra_run_on(variant), choose, fit, weighted_fragments(variant)
    try:
        gw.train(str(GUARD / "price-scratch.json"), sets, heads_only, [forms])
    except Stopped:
        pass
    finally:
        for name, value in built.items():
            setattr(gw, name, value)
    return found


def kept_fits(variant, encoder_key):
    """Both fits (fit_out_of_fold), from .cache/guard when one was made on the same encoder, sets,
    extra rows and fitting code; else fitted and kept."""
    text = Path(__file__).resolve().parent.parent / "src/guard/text"
    inputs = [*variant.sets, "--", *variant.spans_only, "--", variant.forms, *(text / f for f in ("guard_worker.py", "heads.py", "tuning_data.py"))]
    digest = hashlib.sha256(json.dumps([encoder_key, *(vars(variant)[option] for option in FIT_OPTIONS)]).encode())
    for item in inputs:
        digest.update(Path(item).read_bytes() if item != "--" else b"--")
    path = GUARD / f"price-fits-{digest.hexdigest()[:16]}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        return {name: {"chosen": fit["chosen"], "heads": from_json(fit["heads"])} for name, fit in saved.items()}
    fits = {"whole": fit_out_of_fold(variant.sets, [], variant.forms, variant),
            "spans": fit_out_of_fold(variant.sets, variant.spans_only, variant.forms, variant)}
    path.write_text(json.dumps({name: {"chosen": fit["chosen"], "heads": to_json(fit["heads"])} for name, fit in fits.items()}))
    return fits


def served_windows(encoder, text, variant):
    """The windows serving reads for `text`, and the reading that judges them (guard_worker.serve)."""
    # A text of one window reads the same either way: the extra windows are only a longer piece's.
    windows = extra_windows(encoder, text, variant) if variant.serve_windows or variant.serve_clauses else encoder.windows(text)
    reading = gw.reading_of(windows)
    return (windows + encoder.by_words(windows) if reading == "spans" else windows), reading


def extra_windows(encoder, text, variant):
    """A longer text's windows as Encoder.windows reads them, but a piece longer than a window also in
    windows of --serve-windows tokens sliding by half of it, and by its clauses (--serve-clauses)."""
    built = gw.sliding

    def pieces(ids, full):
        if len(ids) <= full:
            return built(ids, full)
        extra = built(ids, variant.serve_windows) if variant.serve_windows else []
        extra += [w for clause in clauses_of(encoder.model, ids) for w in built(clause, full)] if variant.serve_clauses else []
        return built(ids, full) + extra
    gw.sliding = pieces
    try:
        return encoder.windows(text)
    finally:
        gw.sliding = built


CLAUSE_WORDS = ("and", "so", "but", "or", "then")  # a clause starts at one of these, or after a comma


def clauses_of(model, ids):
    """A run-on's clauses: cut after each comma and before each joining word, a clause shorter than
    gw.SHORT tokens read with the one after it (as a run of short sentences is read as one)."""
    joining = {model.tokenizer.token_to_id(w) for w in CLAUSE_WORDS}
    comma = model.tokenizer.token_to_id(",")
    cuts = [i for i in range(1, len(ids)) if ids[i] in joining or ids[i - 1] == comma]
    clauses, start = [], 0
    for cut in cuts + [len(ids)]:
        if cut - start >= gw.SHORT or cut == len(ids):
            clauses.append(ids[start:cut])
            start = cut
    return [c for c in clauses if c]


def judge(texts, encoder, fits, variant):
    """Per text, whether serving flags it for some code, each judge at its own thresholds; and its
    spans' scores (per span, per judge; with --context-gate, also its context's by the one-window heads)."""
    read = [served_windows(encoder, text, variant) for text in texts]
    contexts = [in_context(encoder, text, len(windows)) if variant.context_gate and reading == "spans" else None
                for text, (windows, reading) in zip(texts, read)]
    encoder.model.embed([w for windows, _ in read for w in windows] + [w for c in contexts if c for w in c])  # all new windows in one pass
    flagged, scored = [], []
    for (windows, reading), context in zip(read, contexts):
        x, agree, per_judge = encoder.model.embed(windows), True, []
        for name in gw.JUDGES[reading]:
            scores, chosen = scores_of(x, fits[name]["heads"]).round(4), fits[name]["chosen"]
            agree = agree & (scores[:, 1:] >= chosen["code"]) & (scores[:, :1] >= chosen["harmful"])
            per_judge.append(scores)
        if context:
            around = scores_of(encoder.model.embed(context), fits["whole"]["heads"]).round(4)
            agree = agree & (around[:, 1:] >= fits["whole"]["chosen"]["code"]) & (around[:, :1] >= variant.context_gate)
        flagged.append(bool(np.any(agree)))
        scored.append({"judges": list(gw.JUDGES[reading]), "spans": np.stack(per_judge, 1).tolist(),
                       **({"context": around.tolist()} if context else {})})
    return flagged, scored


def in_context(encoder, text, count):
    """Per span of a longer text (Encoder.windows, then Encoder.by_words' extra spans: their own
    context), the window of WINDOW - 2 ids of the text's pieces centred on it: the span amid its
    neighbours, the span itself when it fills a window. A sentence harmless only beside the one
    before it ("... How do I support her?") is read with it again."""
    built, placed = gw.sliding, []

    def sliding(ids, size):  # as built, noting each piece's ids and where each of its windows starts
        windows, starts = built(ids, size), [0]
        for window in windows[1:]:
            starts.append(next(i for i in range(starts[-1] + 1, len(ids)) if ids[i:i + len(window)] == window))
        placed.append((ids, starts, [len(w) for w in windows]))
        return windows
    gw.sliding = sliding
    try:
        windows = encoder.windows(text)
    finally:
        gw.sliding = built
    size, model = gw.WINDOW - 2, encoder.model
    stream, spans = [], []
    for ids, starts, lengths in placed:
        spans += [(len(stream) + start, len(stream) + start + length) for start, length in zip(starts, lengths)]
        stream += ids
    contexts = []
    for a, b in spans:
        first = max(0, min((a + b - size) // 2, len(stream) - size))
        contexts.append([model.cls] + stream[first:first + size] + [model.sep])
    contexts += encoder.by_words(windows)
    assert len(contexts) == count, "the spans as served, one context each"
    return contexts


def threshold_part(sets, spans_only, forms):
    """The texts priced, by group: the threshold part of the training sets, and the evasion forms."""
    read = lambda paths: [json.loads(line) for p in paths for line in open(p, encoding="utf-8") if line.strip()]  # noqa: E731
    tuned, extra = read(sets), read(spans_only)
    held = lambda rows: [r for r in rows if tuning_data.in_threshold_part(r["text"])]  # noqa: E731
    groups = {
        "harmful requests": [r for r in held(tuned) if r["codes"]],
        "harmful, extra sets (code-tool requests)": [r for r in held(extra) if r["codes"]],
        "look-alikes": [r for r in held(tuned) if r["kind"] == "lookalike"],
        "plain harmless": [r for r in held(tuned) if r["kind"] == "benign"],
        "long writing requests": [r for r in held(tuned) if r["kind"] == "long"],
        "technical texts": [r for r in held(extra) if r["kind"] == "technical"],
    }
    for row in read([forms]):
        groups.setdefault(row["form"] + (" control" if row["kind"] == "form-control" else ""), []).append(row)
    return {name: [r["text"] for r in rows] for name, rows in groups.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--sets", nargs="+", required=True)
    parser.add_argument("--spans-only", nargs="*", default=[])
    parser.add_argument("--forms", required=True)
    parser.add_argument("--run-on", action="append", default=[])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--lookalike-fragments", type=int, default=1)
    parser.add_argument("--pooling", choices=("mean", "mean+max"), default="mean")
    parser.add_argument("--serve-windows", type=int, default=0)
    parser.add_argument("--serve-clauses", action="store_true")
    parser.add_argument("--context-gate", type=float)
    parser.add_argument("--scores")
    variant = parser.parse_args()
    if variant.context_gate and (variant.serve_windows or variant.serve_clauses):
        parser.error("--context-gate reads the spans as built: not with --serve-windows or --serve-clauses")
    encoder_file = GUARD / "mpnet/encoder.onnx"
    key = hashlib.sha256(encoder_file.read_bytes()).hexdigest()[:16] + ("" if variant.pooling == "mean" else "-mean-max")
    if variant.pooling == "mean+max":
        mpnet.mean_pooled = mean_and_max_pooled
    built_embed = gw.MpNet.embed
    store = {}  # one Embeddings for every encoder the fits and the judging load (the same weights)

    def embed(model, windows):
        if "e" not in store:  # loaded once: setdefault would read the whole store again at every call
            store["e"] = Embeddings(GUARD / f"price-embeddings-{key}.npz", lambda ws: built_embed(model, ws))
        return store["e"](windows)

    gw.MpNet.embed = embed
    fits = kept_fits(variant, key)
    encoder = gw.Encoder(str(GUARD / "price-scratch.json"))
    groups = threshold_part(variant.sets, variant.spans_only, variant.forms)
    served, scores = {}, {}
    for name, texts in groups.items():
        flagged, scores[name] = judge(texts, encoder, fits, variant)
        served[name] = [sum(flagged), len(flagged)]
    if variant.scores:
        Path(variant.scores).write_text(json.dumps({"chosen": {name: fit["chosen"] for name, fit in fits.items()}, "groups": scores}))
    report = {"variant": {k: v for k, v in vars(variant).items() if k not in ("out", "scores")},
              "chosen": {name: fit["chosen"] for name, fit in fits.items()}, "served": served}
    if all(vars(variant)[option] == parser.get_default(option) for option in VARIANT_OPTIONS):
        built = {name: json.loads(BUILT[name].read_text()) for name in FITS}
        report["replays_the_build"] = all(built[n]["thresholds"] == {k: fits[n]["chosen"][k] for k in ("harmful", "code")}
                                          and built[n]["out_of_fold"] == fits[n]["chosen"]["out_of_fold"] for n in FITS)
    Path(variant.out).write_text(json.dumps(report, indent=1) + "\n")
    for name in FITS:
        print(name, "heads: chosen", {k: report["chosen"][name][k] for k in ("harmful", "code")})
    for name, (flagged, total) in served.items():
        print(f"{name}: {flagged} of {total} flagged")
    if "replays_the_build" in report:
        print("replays the build:", report["replays_the_build"])


if __name__ == "__main__":
    main()
