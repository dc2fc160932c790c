import assert from 'node:assert/strict';
import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { hello, startTestServer, TEST_KEY, type TestServer } from '../testing/test-server.ts';

/** A raw POST, so that headers fetch would normalise go out as written. */
function post(baseUrl: string, headers: Record<string, string>, body: Buffer): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/chat/completions`, { method: 'POST', headers: { Authorization: `Bearer ${TEST_KEY}`, ...headers } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the JSON body', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());
  const json = Buffer.from(JSON.stringify(hello));

  it('is inflated when sent gzip-encoded', async () => {
    const res = await post(server.baseUrl, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, gzipSync(json));
    assert.equal(res.status, 200);
    assert.equal(res.body.choices[0].message.content, 'hello there');
  });

  it('declared gzip but not gzip is a 400 invalid_request_error, not a 500', async () => {
    const res = await post(server.baseUrl, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }, json);
    assert.equal(res.status, 400);
    assert.deepEqual([res.body.error.type, res.body.error.code], ['invalid_request_error', 'invalid_body']);
    assert.match(res.body.error.message, /header check/);
  });

  it('in a charset other than UTF-8 is a 415', async () => {
    for (const charset of ['utf-7', 'UTF-16', 'latin1', '"utf-7"']) {
      const res = await post(server.baseUrl, { 'Content-Type': `application/json; charset=${charset}` }, json);
      assert.equal(res.status, 415, charset);
      assert.deepEqual([res.body.error.type, res.body.error.code], ['invalid_request_error', 'unsupported_charset']);
    }
    const utf8 = await post(server.baseUrl, { 'Content-Type': 'application/json; charset="UTF-8"' }, json);
    assert.equal(utf8.status, 200);
  });
});
