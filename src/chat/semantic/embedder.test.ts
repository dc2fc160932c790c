import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MiniLmEmbedder, decodeVector, encodeVector, similarity } from './embedder.ts';
import { PIECE_WIDTH, alignment } from './token-alignment.ts';

const python = fileURLToPath(new URL('../../../.venv-guard/bin/python', import.meta.url));

describe('the semantic cache\'s encoder (the guard\'s MiniLM, guard_worker.py embed)', () => {
  const embedder = new MiniLmEmbedder({ python, threads: 1, timeoutMs: 120_000, maxQueued: 10, perCaller: 10 });
  after(() => embedder.close());

  it('gives unit vectors, a paraphrase nearer than another question, and survives the store\'s encoding', async () => {
    const [france, paraphrase, other] = (await Promise.all(
      ['What is the capital of France?', 'Which city is France\'s capital?', 'How do I bake bread?'].map((t) => embedder.embed(t)))).map((r) => r.vector);
    assert.equal(france!.length, 384);
    assert.ok(Math.abs(similarity(france!, france!) - 1) < 1e-3);
    assert.ok(similarity(france!, paraphrase!) > similarity(france!, other!));
    assert.deepEqual(decodeVector(encodeVector(france!)), france);
  });

  it('gives each word piece a unit vector, and aligns a paraphrase better than a question with a word added', async () => {
    const [warranty, paraphrase, extended] = await Promise.all(
      ['Does my laptop have a warranty?', 'Is my laptop covered by a warranty?', 'Does my laptop have an extended warranty?'].map((t) => embedder.embed(t)));
    assert.equal(warranty!.pieces.length, 8 * PIECE_WIDTH, 'not one vector per word piece of "does my lap ##top have a warranty ?"');
    assert.ok(Math.abs(alignment(warranty!.pieces, warranty!.pieces) - 1) < 1e-3);
    assert.ok(alignment(warranty!.pieces, paraphrase!.pieces) > alignment(warranty!.pieces, extended!.pieces),
      `paraphrase ${alignment(warranty!.pieces, paraphrase!.pieces)}, word added ${alignment(warranty!.pieces, extended!.pieces)}`);
  });
});
