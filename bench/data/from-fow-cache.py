"""Builds the semantic cache bench's outside data from fow-cache 0.1.0's question pairs.

fow-cache (PyPI, MIT code, data CC BY 4.0, (c) 2026 Mabon ap Gwyn) ships data/pairs.jsonl:
600 labelled question pairs, written by language models and sample-reviewed by its author; nobody
on this team wrote or chose them. Changes made here (as CC BY asks us to say): pairs tagged
ambiguous are left out; a pair is kept only if neither question is in an earlier kept pair or in
semantic-cache.txt (the bench keys answers by question text, and a question asked twice would be
an exact hit that flatters the near-miss rate); the kept pairs are split, per category and style
in file order, alternately into a held-out half (even positions) and a tuning half (odd).

Usage: python3 from-fow-cache.py PATH/TO/fow_cache/data/pairs.jsonl
Writes semantic-cache-heldout-2.txt and semantic-cache-tuning-2.txt beside this file.
"""
import collections
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = """# {what}, converted by from-fow-cache.py from fow-cache 0.1.0's data/pairs.jsonl
# (PyPI package fow-cache, data licensed CC BY 4.0 https://creativecommons.org/licenses/by/4.0/,
# (c) 2026 Mabon ap Gwyn; written by language models, not by this team). Changed: ambiguous pairs
# and pairs repeating a question left out, split alternately into held-out and tuning halves.
# `G label | question | question`: a should-hit pair (paraphrase or near repeat), one answer.
# `N label | question || label | question`: a trap (negation, entity swap, number/date, scope).
"""


def main(path: str) -> None:
    used = set()
    for line in open(os.path.join(HERE, 'semantic-cache.txt'), encoding='utf8'):
        if line[:2] in ('G ', 'N '):
            used.update(p.strip() for p in re.split(r'\|\|?', line[2:]))
    strata = collections.defaultdict(list)
    for raw in open(path, encoding='utf8'):
        row = json.loads(raw)
        if row.get('ambiguous') or row['a'] in used or row['b'] in used or row['a'] == row['b']:
            continue
        used.update((row['a'], row['b']))
        strata[(row['category'], row.get('style'))].append(row)
    halves = {'heldout': [], 'tuning': []}
    for key in sorted(strata):
        for i, row in enumerate(strata[key]):
            halves['heldout' if i % 2 == 0 else 'tuning'].append(row)
    for name, rows in halves.items():
        lines = []
        for r in rows:
            if r['same_answer']:
                lines.append(f"G {r['id']} | {r['a']} | {r['b']}")
            else:
                lines.append(f"N {r['id']}a | {r['a']} || {r['id']}b | {r['b']}")
        what = ('The semantic cache bench held-out set 2: SEALED, never run while tuning (its SHA-256 is in the bench)'
                if name == 'heldout' else 'The semantic cache bench tuning set 2 (outside data, tuning only)')
        with open(os.path.join(HERE, f'semantic-cache-{name}-2.txt'), 'w', encoding='utf8') as out:
            out.write(HEADER.format(what=what) + '\n'.join(lines) + '\n')
        counts = collections.Counter(l[0] for l in lines)
        print(name, dict(counts))


main(sys.argv[1])
