import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { assertMatchesSchema } from '../../contract-tests/contract-schemas.ts';
import { createMockFront } from './mock-front.ts';

// The front's own answers (not Prism's, which contract-tests/mock.test.ts checks against a running
// Prism): they must be the service's envelope, judged by the contract's ErrorEnvelope and by its
// exact fields, so a hand-written envelope of another shape fails here without Prism.

const listen = (server: Server) =>
  new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));

/** A loopback port with nothing listening on it: a Prism that is down. */
async function closedPort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function post(port: number, body: string) {
  const res = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST', headers: { Authorization: 'Bearer any-key', 'Content-Type': 'application/json' }, body,
  });
  return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as { error: Record<string, unknown> } };
}

describe('the mock front answers its own errors in the service envelope', () => {
  let front: Server;
  let port: number;
  before(async () => {
    front = createMockFront(`http://127.0.0.1:${await closedPort()}`, '/nonexistent/docs.html', 0);
    port = await listen(front);
  });
  after(() => new Promise((resolve) => front.close(resolve)));

  it('a body that is not JSON: 400 invalid_json', async () => {
    const answer = await post(port, '{"model":');
    assert.equal(answer.status, 400);
    assert.match(answer.type ?? '', /^application\/json/);
    assertMatchesSchema('ErrorEnvelope', answer.body);
    assert.deepEqual(Object.keys(answer.body), ['error']);
    const { message, ...rest } = answer.body.error;
    assert.deepEqual(rest, { type: 'invalid_request_error', code: 'invalid_json', param: null });
    assert.match(String(message), /^The body is not valid JSON: /);
  });

  it('a Prism that cannot be reached: 502 mock_unavailable', async () => {
    const answer = await post(port, JSON.stringify({ model: 'service', messages: [{ role: 'user', content: 'Hi' }] }));
    assert.equal(answer.status, 502);
    assertMatchesSchema('ErrorEnvelope', answer.body);
    assert.deepEqual(Object.keys(answer.body), ['error']);
    const { message, ...rest } = answer.body.error;
    assert.deepEqual(rest, { type: 'service_unavailable', code: 'mock_unavailable', param: null });
    assert.match(String(message), /^The Prism mock behind this front failed: /);
  });
});
