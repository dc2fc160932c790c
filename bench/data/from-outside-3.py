"""Builds the semantic cache bench's held-out set 3 from two packages' hand-written request pairs.

- semanticmemo 2.0.0 (PyPI, MIT, (c) 2026 Rajveer Singh Saggu): the pairs its author marks as
  written by hand (data/gold/equivalence_gold.jsonl, data/fixtures/customer_support_pairs.jsonl,
  benchmarks/data/*.jsonl; its generated training pairs are not read), fields prompt_a, prompt_b,
  label (1: the same answer serves both).
- waggle-cache 0.4.1 (PyPI, Apache-2.0, Abhigyan Shekhar): benchmarks/paraphrases.json and
  benchmarks/policy_cases.json, fields left, right, reusable.

Nobody on this team wrote or chose these pairs. Changes made here: a pair of identical texts, a
pair labelled both ways, a paraphrase whose numbers differ (ambiguous), waggle-cache's
`non_cacheable` cases (about whether to cache at all, not about meaning), and a trap whose two
texts share no word of four letters or more (unrelated requests, not a near miss) are left out; a
pair is kept only if neither text is in an earlier kept pair or in the bench's other sets (the
bench keys answers by text: a text asked twice would be an exact hit).

Usage (pip download --no-deps --no-binary :all: semanticmemo==2.0.0 waggle-cache==0.4.1; unpack both):
  python3 from-outside-3.py SEMANTICMEMO_DIR WAGGLE_DIR
Writes semantic-cache-heldout-3.txt beside this file.
"""
import collections
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = """# The semantic cache bench held-out set 3: SEALED, never run while tuning (its SHA-256 is in the bench).
# Converted by from-outside-3.py from hand-written pairs of two PyPI packages, not written by this team:
# semanticmemo 2.0.0 (MIT, (c) 2026 Rajveer Singh Saggu) and waggle-cache 0.4.1 (Apache-2.0, Abhigyan Shekhar).
# Changed: identical, conflicting, ambiguous, unrelated and repeated pairs left out (see the converter).
# `G label | text | text`: a should-hit pair (paraphrase), one answer.
# `N label | text || label | text`: a trap (alike in words, a different answer).
"""


def pairs(semanticmemo, waggle):
    names = ['data/gold/equivalence_gold.jsonl', 'data/fixtures/customer_support_pairs.jsonl']
    names += sorted(os.path.relpath(p, semanticmemo) for p in glob.glob(os.path.join(semanticmemo, 'benchmarks/data/*.jsonl')))
    for name in names:
        for i, line in enumerate(open(os.path.join(semanticmemo, name), encoding='utf8')):
            row = json.loads(line)
            yield f"sm-{os.path.basename(name).split('.')[0]}-{i}", row['prompt_a'].strip(), row['prompt_b'].strip(), row['label'] == 1, row.get('domain')
    for name in ['paraphrases', 'policy_cases']:
        for i, row in enumerate(json.load(open(os.path.join(waggle, 'benchmarks', f'{name}.json'), encoding='utf8'))):
            yield f"wg-{name}-{i}", row['left'].strip(), row['right'].strip(), row['reusable'], row.get('domain')


def words(text):
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if len(w) >= 4}


def main(semanticmemo, waggle):
    used = set()
    for path in glob.glob(os.path.join(HERE, 'semantic-cache*.txt')):
        for line in open(path, encoding='utf8'):
            if line[:2] in ('G ', 'N '):
                used.update(p.strip() for p in re.split(r'\|\|?', line[2:]))
    rows = list(pairs(semanticmemo, waggle))
    labels = collections.defaultdict(set)
    for _, a, b, same, _ in rows:
        labels[frozenset((a, b))].add(same)
    lines, dropped = [], collections.Counter()
    for key, a, b, same, domain in rows:
        reason = ('identical' if a == b else 'labelled both ways' if len(labels[frozenset((a, b))]) > 1
                  else 'not about meaning' if domain == 'non_cacheable'
                  else 'numbers differ in a paraphrase' if same and sorted(re.findall(r'\d+', a)) != sorted(re.findall(r'\d+', b))
                  else 'unrelated' if not same and not (words(a) & words(b))
                  else 'repeated text' if a in used or b in used else None)
        if reason:
            dropped[reason] += 1
            continue
        used.update((a, b))
        lines.append(f"G {key} | {a} | {b}" if same else f"N {key}a | {a} || {key}b | {b}")
    with open(os.path.join(HERE, 'semantic-cache-heldout-3.txt'), 'w', encoding='utf8') as out:
        out.write(HEADER + '\n'.join(lines) + '\n')
    print(dict(collections.Counter(l[0] for l in lines)), 'left out:', dict(dropped))


main(sys.argv[1], sys.argv[2])
