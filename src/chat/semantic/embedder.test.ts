import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MiniLmEmbedder, decodeVector, encodeVector, similarity } from './embedder.ts';

const python = fileURLToPath(new URL('../../../.venv-guard/bin/python', import.meta.url));

describe('the semantic cache\'s encoder (the guard\'s MiniLM, guard_worker.py embed)', () => {
  const embedder = new MiniLmEmbedder({ python, threads: 1, timeoutMs: 120_000, maxQueued: 10, perCaller: 10 });
  after(() => embedder.close());

  it('gives unit vectors, a paraphrase nearer than another question, and survives the store\'s encoding', async () => {
    const [france, paraphrase, other] = await Promise.all(
      ['What is the capital of France?', 'Which city is France\'s capital?', 'How do I bake bread?'].map((t) => embedder.embed(t)));
    assert.equal(france!.length, 384);
    assert.ok(Math.abs(similarity(france!, france!) - 1) < 1e-3);
    assert.ok(similarity(france!, paraphrase!) > similarity(france!, other!));
    assert.deepEqual(decodeVector(encodeVector(france!)), france);
  });
});
