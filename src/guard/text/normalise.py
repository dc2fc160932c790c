"""Text normalisation for the text guard: the same request in another form reads the same.

Done here, in the worker, rather than in TypeScript before the texts are sent: training and
serving both go through the worker, so the heads are fitted on exactly what they will judge, and
the word segmentation below needs the encoder's own vocabulary, which only the worker loads.

  - NFKC: fullwidth forms, ligatures, mathematical letters and the like become plain letters.
  - Format characters (zero-width spaces and joiners, soft hyphens, bidirectional marks) go.
  - Cyrillic and Greek letters drawn like Latin ones are read as Latin, in a word all of whose
    letters can be so read (a real Russian or Greek word almost always has one that cannot, and
    stays as it is).
  - Letters spaced out ("h o w  t o  m a k e", "b.o.m.b") are joined back into words: at the wider
    gaps when there are any, else where the vocabulary's most likely words fall.
  - Runs of whitespace, line breaks included, become one space. Case needs nothing here: the
    tokenizer lowercases.
"""
import math
import re
import unicodedata

# Cyrillic and Greek letters (lower and upper case) drawn like a Latin one.
_LOOKALIKES = {
    "а": "a", "в": "b", "с": "c", "ԁ": "d", "е": "e", "ё": "e", "һ": "h", "і": "i", "ї": "i", "ј": "j",
    "к": "k", "ӏ": "l", "м": "m", "н": "h", "о": "o", "р": "p", "ԛ": "q", "ѕ": "s", "т": "t", "υ": "u",
    "ѵ": "v", "ԝ": "w", "х": "x", "у": "y", "г": "r", "п": "n", "ь": "b", "з": "3",
    "А": "A", "В": "B", "С": "C", "Е": "E", "Н": "H", "І": "I", "Ј": "J", "К": "K", "М": "M", "О": "O",
    "Р": "P", "Ѕ": "S", "Т": "T", "Х": "X", "У": "Y", "Ԝ": "W",
    "α": "a", "β": "b", "ϲ": "c", "δ": "d", "ε": "e", "η": "n", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "μ": "u", "χ": "x", "γ": "y", "ω": "w", "ϳ": "j", "ς": "s",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}
_WORD = re.compile(r"\w+")
# Three or more single letters apart by the same kind of separator: spaces, or one of . - _ * ·
_SPACED = re.compile(r"(?<!\S)(?:[^\W\d_] +){2,}[^\W\d_](?!\S)")
_DOTTED = re.compile(r"(?<![^\W_])(?:[^\W\d_][.\-_*·]){2,}[^\W\d_](?![^\W_])")


def _fold_word(match):
    word = match.group(0)
    if all(ch in _LOOKALIKES or ch.isascii() for ch in word):
        return "".join(_LOOKALIKES.get(ch, ch) for ch in word)
    return word


class Segmenter:
    """Splits a run of letters without spaces into words, the likeliest by the vocabulary's order
    (a WordPiece vocabulary lists its whole words most frequent first, so a word's place stands
    in for its frequency, Zipf-like)."""

    def __init__(self, vocab):
        first = vocab.get("the", 0)  # whole words start here; single characters come before
        self.cost = {}
        for word, rank in vocab.items():
            if word.isalpha() and word.isascii() and rank >= first:
                self.cost[word] = math.log(rank - first + 2) + 1.0
        for letter in "abcdefghijklmnopqrstuvwxyz":  # a lone letter is a word only as a last resort
            self.cost[letter] = 4.0 if letter in "ai" else 14.0
        self.longest = max(len(w) for w in self.cost)

    def split(self, letters):
        text = letters.lower()
        best = [0.0] + [math.inf] * len(text)
        back = [0] * (len(text) + 1)
        for end in range(1, len(text) + 1):
            for start in range(max(0, end - self.longest), end):
                cost = self.cost.get(text[start:end], math.inf if end - start > 1 else 14.0)
                if best[start] + cost < best[end]:
                    best[end], back[end] = best[start] + cost, start
        words, end = [], len(text)
        while end > 0:
            words.append(letters[back[end]:end])
            end = back[end]
        return " ".join(reversed(words))


def _join_spaced(segmenter):
    def join(match):
        run = match.group(0)
        gaps = re.findall(r" +", run)
        if len(set(gaps)) > 1:  # words apart by wider gaps than letters: those are the words
            narrow = min(len(g) for g in gaps)
            return " ".join(part.replace(" ", "") for part in re.split(" {%d,}" % (narrow + 1), run))
        return segmenter.split(run.replace(" ", ""))
    return join


def normalise(text, segmenter):
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = _WORD.sub(_fold_word, text)
    text = re.sub(r"[^\S\n]", " ", text)  # every kind of space one plain space, line breaks kept for now
    text = "\n".join(_SPACED.sub(_join_spaced(segmenter), line) for line in text.split("\n"))
    text = _DOTTED.sub(lambda m: segmenter.split(re.sub(r"[.\-_*·]", "", m.group(0))), text)
    return re.sub(r"\s+", " ", text).strip()
