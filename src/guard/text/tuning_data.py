"""What the guard learns from besides the labelled texts, shared by the encoder's fine-tuning
(finetune.py) and the heads' fit (guard_worker.py train).

in_threshold_part(text): a fifth of the training texts, fixed by the SHA-256 of the text, that the
  fine-tuning never reads. The heads' thresholds are chosen there: on texts the tuned encoder has
  learned, the heads' scores would be far apart and the thresholds chosen on them too lenient.
run_on_windows(...): windows of run-on talk (harmless texts, their full stops dropped, joined by
  "and", "so" ...), half of them with a harmful request inside. A request at the end of a long
  sentence with no full stop is read in windows that hold it among harmless words; an encoder
  that has only seen requests alone averages it away (README, "Fine-tuning the encoder").
"""
import hashlib
import re

import numpy as np

THRESHOLD_SHARE = 20  # percent
JOINS = [", and ", " and then ", ", so ", " "]
STOPS = re.compile(r"[.!?]+(\s|$)")
REQUEST_TOKENS = 50  # a request longer than this is cut: it must leave room for talk around it
RUN_ON_COUNT = 1500  # harmless windows, and as many holding a request (the probe's choice)
SEED = 0


def in_threshold_part(text):
    return hashlib.sha256(text.encode()).digest()[0] * 100 // 256 >= 100 - THRESHOLD_SHARE


def run_on(text):
    """The text with its sentence ends dropped, as in a run-on."""
    return STOPS.sub(r"\1", text).strip()


def tuning_rows(rows):
    """The rows fine-tuning reads: short texts outside the threshold part."""
    return [r for r in rows if r["kind"] != "long" and not in_threshold_part(r["text"])]


def run_on_windows(rows, ids_of, size):
    """RUN_ON_COUNT windows of `size` token ids of harmless run-on talk, then as many with a harmful
    request among it, drawn from the tuning rows of `rows` (harmless ones: plain texts and
    look-alikes); with each window the row it stands for ({"codes": [], ...} or the request's codes).
    The same rows give the same windows: the fine-tuning and the heads read the same ones."""
    rng = np.random.default_rng(SEED)
    rows = tuning_rows(rows)
    harmless = [r["text"] for r in rows if not r["codes"] and r["kind"] in ("benign", "lookalike")]
    harmful = [r for r in rows if r["codes"]]

    def talk(length):
        join, ids = JOINS[rng.integers(len(JOINS))], []
        while len(ids) < length:
            ids += ids_of(run_on(harmless[rng.integers(len(harmless))]) + join)
        return ids[:length]

    windows = [(talk(size), {"codes": [], "kind": "window"}) for _ in range(RUN_ON_COUNT)]
    for _ in range(RUN_ON_COUNT):
        request = harmful[rng.integers(len(harmful))]
        ids = ids_of(run_on(request["text"]))[:REQUEST_TOKENS]
        at, around = rng.integers(0, size - len(ids) + 1), talk(size)
        join = ids_of(JOINS[rng.integers(len(JOINS))].strip() or "and") if at else []
        windows.append(((around[:max(at - len(join), 0)] + join + ids + around[at:])[:size], {"codes": request["codes"], "kind": "window"}))
    return windows
