import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hello, postCompletion, startTestServer, type TestServer } from '../testing/test-server.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('x-request-id', () => {
  let server: TestServer;
  before(async () => (server = await startTestServer()));
  after(() => server.close());
  const idFor = async (sent?: string) => {
    const res = await postCompletion(server.baseUrl, hello, sent === undefined ? {} : { 'x-request-id': sent });
    await res.body?.cancel();
    return res.headers.get('x-request-id')!;
  };

  it("keeps a caller's id of up to 128 letters, digits, dots, dashes and underscores", async () => {
    for (const id of ['req-42', 'a.B_c-9', 'x'.repeat(128)]) assert.equal(await idFor(id), id);
  });

  it('replaces a longer one, or one with any other character, with a fresh id (it goes into logs and error messages)', async () => {
    for (const id of ['x'.repeat(129), 'a b', 'a"b', '<script>', '{"reqId":"forged"}', 'ab\tc', 'a/b', '%0a', 'a,b']) {
      const got = await idFor(id);
      assert.match(got, UUID, `${JSON.stringify(id)} was kept as ${JSON.stringify(got)}`);
    }
    assert.match(await idFor(), UUID);
    assert.notEqual(await idFor('a b'), await idFor('a b'), 'each request gets its own');
  });
});
