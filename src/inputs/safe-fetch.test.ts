import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ServiceError } from '../errors/service-error.ts';
import { type FetchLimits, refusedAddress, safeFetch } from './safe-fetch.ts';

const limits: FetchLimits = { maxBytes: 1000, timeoutMs: 2000, maxRedirects: 3, allowLoopback: false };
const refused = (code: string, status = 400) => (e: unknown) => e instanceof ServiceError && e.status === status && e.code === code;

describe('safeFetch', () => {
  let base = '';
  let server: ReturnType<typeof createServer>;
  before(async () => {
    server = createServer((req, res) => {
      if (req.url === '/to-metadata') return void res.writeHead(302, { Location: 'http://169.254.169.254/latest/meta-data/' }).end();
      if (req.url === '/to-ok') return void res.writeHead(301, { Location: '/ok' }).end();
      if (req.url === '/big') return void res.end('x'.repeat(5000));
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  it('refuses loopback, cloud metadata and private addresses', async () => {
    await assert.rejects(safeFetch(`${base}/ok`, limits, 'url'), refused('url_not_allowed'));
    await assert.rejects(safeFetch('http://169.254.169.254/latest/meta-data/', limits, 'url'), refused('url_not_allowed'));
    await assert.rejects(safeFetch('http://[::ffff:10.0.0.1]/', limits, 'url'), refused('url_not_allowed'));
    await assert.rejects(safeFetch('http://localhost/', limits, 'url'), refused('url_not_allowed'));
  });

  it('refuses a public name that resolves to a private address, before connecting', async () => {
    const lookup = ((_host: string, _options: unknown, callback: (e: null, a: { address: string; family: number }[]) => void) =>
      callback(null, [{ address: '10.1.2.3', family: 4 }])) as unknown as FetchLimits['lookup'];
    await assert.rejects(safeFetch('http://files.example.com/a.png', { ...limits, lookup }, 'url'),
      (e: unknown) => refused('url_not_allowed')(e) && /10\.1\.2\.3 is a private address/.test((e as Error).message));
  });

  it('refuses other schemes', async () => {
    await assert.rejects(safeFetch('file:///etc/passwd', limits, 'url'), refused('url_not_allowed'));
    await assert.rejects(safeFetch('ftp://example.com/x', limits, 'url'), refused('url_not_allowed'));
  });

  it('with loopback allowed by configuration: fetches, follows redirects, and checks every hop', async () => {
    const open = { ...limits, allowLoopback: true };
    assert.equal((await safeFetch(`${base}/to-ok`, open, 'url')).bytes.toString(), 'hello');
    await assert.rejects(safeFetch(`${base}/to-metadata`, open, 'url'), refused('url_not_allowed'));
    await assert.rejects(safeFetch(`${base}/big`, open, 'url'), refused('file_too_large', 413));
  });

  it('classifies addresses', () => {
    assert.equal(refusedAddress('93.184.216.34', false), undefined);
    assert.match(refusedAddress('192.168.1.1', false)!, /private/);
    assert.match(refusedAddress('fd00::1', false)!, /uniqueLocal/);
    assert.match(refusedAddress('0.0.0.0', false)!, /unspecified/);
    assert.equal(refusedAddress('127.0.0.1', true), undefined);
    assert.match(refusedAddress('169.254.169.254', true)!, /linkLocal/);
  });

  it('refuses http://[::127.0.0.1]/ (IPv4-compatible loopback) without connecting', async () => {
    await assert.rejects(safeFetch('http://[::127.0.0.1]/', limits, 'url'),
      (e: unknown) => refused('url_not_allowed')(e) && /127\.0\.0\.1/.test((e as Error).message));
  });

  // Each IPv6 form that carries an IPv4 address, judged by that address: [address, embedded, allowed].
  const embedding: [string, string, boolean][] = [
    ['::7f00:1', 'IPv4-compatible loopback', false],
    ['::a9fe:a9fe', 'IPv4-compatible metadata', false],
    ['::ffff:10.0.0.1', 'IPv4-mapped private', false],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata', false],
    ['::ffff:0:7f00:1', 'SIIT loopback', false],
    ['::ffff:0:c0a8:101', 'SIIT private', false],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata', false],
    ['64:ff9b::5db8:d822', 'NAT64 public', true],
    ['64:ff9b:1::a00:1', 'local-use NAT64 private', false],
    ['64:ff9b:1::5db8:d822', 'local-use NAT64 public', true],
    ['2002:7f00:1::1', '6to4 loopback', false],
    ['2002:a00:1::1', '6to4 private', false],
    ['2002:5db8:d822::1', '6to4 public', true],
    ['2001:0:a9fe:a9fe::a247:27dd', 'Teredo with a metadata server', false],
    ['2001:0:5db8:d822::f5ff:fefe', 'Teredo with a private client (10.0.1.1 inverted)', false],
    ['2001:0:5db8:d822::a247:27dd', 'Teredo with a public server and client', true],
  ];
  for (const [address, form, allowed] of embedding) {
    it(`judges ${address} (${form}) by the IPv4 address it embeds`, () => {
      if (allowed) assert.equal(refusedAddress(address, false), undefined);
      else assert.ok(refusedAddress(address, false), `${address} was allowed`);
    });
  }

  it('keeps the own meaning of :: and ::1, allows IPv6 that embeds nothing, refuses the rest', () => {
    assert.match(refusedAddress('::', false)!, /unspecified/);
    assert.match(refusedAddress('::1', false)!, /loopback/);
    assert.equal(refusedAddress('::1', true), undefined);
    assert.equal(refusedAddress('2606:4700:4700::1111', false), undefined);
    assert.match(refusedAddress('fe80::1', false)!, /linkLocal/);
    assert.match(refusedAddress('ff02::1', false)!, /multicast/);
    assert.equal(refusedAddress('::ffff:127.0.0.1', true), undefined, 'loopback allowed by configuration, as plain IPv4');
    assert.ok(refusedAddress('::ffff:169.254.169.254', true), 'metadata never allowed');
  });
});
