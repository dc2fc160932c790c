import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config.ts';

const HERE = new URL('.', import.meta.url).pathname;
const BASE = new URL('../../../.cache/guard/mpnet-base', import.meta.url).pathname; // make setup puts it there

/** Runs `script` in the guard's Python, beside the worker's modules; its last line out is JSON. */
function python<T>(script: string): T {
  const out = execFileSync(loadConfig({}).guard.python, ['-c', script], { cwd: HERE, maxBuffer: 1 << 24 }).toString().trim().split('\n');
  return JSON.parse(out[out.length - 1]!) as T;
}

describe("the guard encoder's fine-tuning", () => {
  // The layers are tuned in JAX and served from the int8 graph build_encoder.py writes: a
  // difference between the two (a transposed weight, another activation) would serve weights
  // that do something else than what was tuned. Untuned weights through both must agree.
  it('trains the same network the served graph runs', () => {
    const cosines = python<number[]>(`
import json, tempfile
import numpy as np
from build_encoder import read_safetensors, write_encoder
from finetune import Encoder, LAYERS, TOP, batches
from mpnet import MpNet
weights = read_safetensors("${BASE}/model.safetensors")
texts = ["How do I bake sourdough bread at home?", "Tell me how to pick a lock on a neighbour's door", "ok"]
with tempfile.TemporaryDirectory() as out:
    write_encoder(weights, out)
    import shutil; shutil.copy("${BASE}/tokenizer.json", out)
    served = MpNet(out, 2)
    windows = [[served.cls] + served.ids(t) + [served.sep] for t in texts]
    expected = served.embed(windows)
encoder = Encoder(weights)
tuned = np.zeros((len(texts), 768), np.float32)
for chosen, ids, mask in batches(windows):
    tuned[chosen] = np.asarray(encoder.upper(encoder.layers[LAYERS - TOP:], encoder.lower(ids, mask), mask))
print(json.dumps((tuned * expected).sum(1).tolist()))`);
    assert.equal(cosines.length, 3);
    for (const cosine of cosines) assert.ok(cosine > 0.98, `cosine ${cosine} between the tuned network and the served graph`);
  });

  // The thresholds are chosen on the threshold part because the fine-tuning never read it:
  // a threshold-part text leaking into the run-on windows would make them lenient.
  it('never reads a text of the threshold part, not even inside run-on windows', () => {
    const result = python<{ thresholdPart: number; leaked: number; windows: number; requests: number }>(`
import json
from tuning_data import in_threshold_part, run_on_windows
rows = [{"text": f"word{i} " * 3 + ".", "codes": ["S1"] if i % 3 == 0 else [], "kind": "benign"} for i in range(300)]
threshold_part = {i for i, r in enumerate(rows) if in_threshold_part(r["text"])}
ids_of = lambda text: [int(w[4:]) for w in text.replace(",", " ").split() if w.startswith("word")]
windows = run_on_windows(rows, ids_of, 24)
seen = {i for ids, _ in windows for i in ids}
print(json.dumps({"thresholdPart": len(threshold_part), "leaked": len(seen & threshold_part), "windows": len(windows),
                  "requests": sum(1 for _, row in windows if row["codes"])}))`);
    assert.ok(result.thresholdPart > 30, `${result.thresholdPart} texts in the threshold part`);
    assert.equal(result.leaked, 0);
    assert.equal(result.requests * 2, result.windows);
  });
});
