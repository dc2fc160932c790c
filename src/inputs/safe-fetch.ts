import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { invalidRequest, payloadTooLarge, ServiceError, urlNotAllowed } from '../errors/service-error.ts';

export interface FetchLimits {
  maxBytes: number;
  timeoutMs: number;
  maxRedirects: number;
  /** Tests only: lets loopback addresses through (never private, link-local or metadata ones). */
  allowLoopback: boolean;
  /** Tests only: a resolver standing in for DNS. */
  lookup?: typeof dnsLookup;
}

export interface Fetched {
  bytes: Buffer;
  contentType: string | undefined;
  finalUrl: string;
}

/**
 * The ONE way the service fetches a URL a caller gave it. http(s) only; the address a name
 * resolves to is checked at connect time (so a name cannot resolve to one address when checked
 * and another when used) and again for every redirect; private, loopback, link-local (cloud
 * metadata), unique-local, multicast and reserved addresses are refused, also when an IPv6 address
 * embeds them (mapped, NAT64, 6to4, Teredo…); time and size are bounded. `caller` is the request's
 * signal: when the caller leaves, the fetch stops (rejected with the signal's reason) instead of
 * holding its connection until the deadline.
 */
export async function safeFetch(url: string, limits: FetchLimits, param: string, caller?: AbortSignal): Promise<Fetched> {
  const deadline = AbortSignal.timeout(limits.timeoutMs);
  const signal = caller ? AbortSignal.any([deadline, caller]) : deadline;
  let current = parseUrl(url, param);
  for (let hop = 0; hop <= limits.maxRedirects; hop++) {
    const response = await request(current, limits, signal, param);
    if (response.redirect) {
      current = parseUrl(new URL(response.redirect, current).toString(), param);
      continue;
    }
    return { bytes: response.bytes!, contentType: response.contentType, finalUrl: current.toString() };
  }
  throw invalidRequest(`${param}: more than ${limits.maxRedirects} redirects`, 'url_fetch_failed', param);
}

function parseUrl(url: string, param: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalidRequest(`${param} is not a valid URL`, 'invalid_url', param);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw invalidRequest(`${param}: only http and https URLs can be fetched`, 'url_not_allowed', param);
  }
  return parsed;
}

/** Why an address may not be fetched, or undefined when it may. */
export function refusedAddress(address: string, allowLoopback: boolean): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return 'not an IP address';
  }
  const embedded = parsed.kind() === 'ipv6' ? embeddedIPv4(parsed as ipaddr.IPv6) : [];
  if (embedded.length === 0) {
    const range = refusedRange(parsed, allowLoopback);
    return range && `${address} is a ${range} address`;
  }
  // A packet to such an address ends up at the IPv4 one (by a translator, a tunnel or the kernel),
  // so that address is what counts; ipaddr.js would call several of these forms plain unicast.
  for (const v4 of embedded) {
    const range = refusedRange(v4, allowLoopback);
    if (range) return `${address} embeds ${v4.toString()}, a ${range} address`;
  }
  return undefined;
}

/** The name of the address's range when that range may not be fetched. */
function refusedRange(ip: ipaddr.IPv4 | ipaddr.IPv6, allowLoopback: boolean): string | undefined {
  const range = ip.range();
  return range === 'unicast' || (range === 'loopback' && allowLoopback) ? undefined : range;
}

const ipv4At = (bytes: number[], at: number, xor = 0) => new ipaddr.IPv4(bytes.slice(at, at + 4).map((b) => b ^ xor));

/** The IPv6 ranges that carry IPv4 addresses, and where in the 16 bytes those sit. */
const EMBEDDING: { range: [ipaddr.IPv6, number]; read: (bytes: number[]) => ipaddr.IPv4[] }[] = [
  { range: ipaddr.IPv6.parseCIDR('::/96'), read: (b) => [ipv4At(b, 12)] }, // IPv4-compatible
  { range: ipaddr.IPv6.parseCIDR('::ffff:0:0/96'), read: (b) => [ipv4At(b, 12)] }, // IPv4-mapped
  { range: ipaddr.IPv6.parseCIDR('::ffff:0:0:0/96'), read: (b) => [ipv4At(b, 12)] }, // SIIT
  { range: ipaddr.IPv6.parseCIDR('64:ff9b::/96'), read: (b) => [ipv4At(b, 12)] }, // NAT64
  { range: ipaddr.IPv6.parseCIDR('64:ff9b:1::/48'), read: (b) => [ipv4At(b, 12)] }, // local-use NAT64
  { range: ipaddr.IPv6.parseCIDR('2002::/16'), read: (b) => [ipv4At(b, 2)] }, // 6to4
  // Teredo: the server, and the client with its bits inverted; either may be the one reached.
  { range: ipaddr.IPv6.parseCIDR('2001::/32'), read: (b) => [ipv4At(b, 4), ipv4At(b, 12, 0xff)] },
];

function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const range = ip.range();
  if (range === 'unspecified' || range === 'loopback') return []; // :: and ::1 mean themselves
  const form = EMBEDDING.find((e) => ip.match(e.range));
  return form ? form.read(ip.toByteArray()) : [];
}

/** A lookup that refuses a name resolving to a forbidden address with the caller's answer, which the request's `error` passes on. */
function checkedLookup(allowLoopback: boolean, resolve: typeof dnsLookup, param: string): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0);
      const refused = addresses.map((a) => refusedAddress(a.address, allowLoopback)).find(Boolean);
      if (refused) return callback(urlNotAllowed(param, `${hostname} resolves to ${refused}`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

interface RawResponse {
  redirect?: string;
  bytes?: Buffer;
  contentType?: string;
}

function request(url: URL, limits: FetchLimits, signal: AbortSignal, param: string): Promise<RawResponse> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const refused = refusedAddress(host, limits.allowLoopback);
    if (refused) return Promise.reject(urlNotAllowed(param, refused));
  }
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.get(url, { lookup: checkedLookup(limits.allowLoopback, limits.lookup ?? dnsLookup, param), signal, headers: { 'User-Agent': 'chat-completion-service' } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        return resolve({ redirect: res.headers.location });
      }
      if (status < 200 || status >= 300) {
        res.resume();
        return reject(invalidRequest(`${param}: the server answered HTTP ${status}`, 'url_fetch_failed', param));
      }
      const declared = Number(res.headers['content-length'] ?? 0);
      if (declared > limits.maxBytes) {
        res.destroy();
        return reject(tooLarge(param, limits.maxBytes));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > limits.maxBytes) {
          res.destroy();
          reject(tooLarge(param, limits.maxBytes));
        } else {
          chunks.push(chunk);
        }
      });
      res.on('end', () => resolve({ bytes: Buffer.concat(chunks), contentType: res.headers['content-type'] }));
      res.on('error', reject);
    });
    req.on('error', (err) => {
      if (err instanceof ServiceError) return reject(err); // the lookup's refusal
      if (signal.aborted) {
        // The deadline's reason is a TimeoutError; any other is the caller's, passed on as the queue does.
        const timedOut = (signal.reason as Error | undefined)?.name === 'TimeoutError';
        return reject(timedOut ? invalidRequest(`${param}: no answer within ${limits.timeoutMs} ms`, 'url_fetch_failed', param) : signal.reason);
      }
      reject(invalidRequest(`${param} could not be fetched: ${err.message}`, 'url_fetch_failed', param));
    });
  });
}

export const tooLarge = (param: string, maxBytes: number) =>
  payloadTooLarge('file_too_large', `${param} exceeds the limit of ${maxBytes} bytes.`, param);
