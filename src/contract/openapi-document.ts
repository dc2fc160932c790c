import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const CONTRACT_PATH = fileURLToPath(new URL('../../openapi.yaml', import.meta.url));

/** Everything under this prefix belongs to the contract. */
export const BASE_PATH = '/v1';

type Json = unknown;

export function loadContract(path = CONTRACT_PATH): Record<string, Json> {
  return parse(readFileSync(path, 'utf8')) as Record<string, Json>;
}

/**
 * The copy of the contract that express-openapi-validator gets. Two differences, both because of
 * the validator: it rejects every request when a `discriminator` sits in a request body schema
 * (known in 5.6), so discriminators go (each variant is already told apart by its `type` enum,
 * so `oneOf` alone validates the same); and it derives its base path from `servers`, which in
 * the contract is a URL template, so the copy names the path alone.
 */
export function validatorCopy(contract: Record<string, Json>): Record<string, Json> {
  const copy = withoutKey(structuredClone(contract), 'discriminator') as Record<string, Json>;
  copy.servers = [{ url: BASE_PATH }];
  return copy;
}

/**
 * The copy Prism serves: Prism matches request paths against `paths` alone and ignores `servers`,
 * so the copy writes the base path into each path, and the mock answers at the same `/v1/...`
 * URLs as the service.
 */
export function mockCopy(contract: Record<string, Json>, origin: string): Record<string, Json> {
  const copy = structuredClone(contract);
  const paths = copy.paths as Record<string, Json>;
  copy.paths = Object.fromEntries(Object.entries(paths).map(([path, item]) => [`${BASE_PATH}${path}`, item]));
  copy.servers = [{ url: origin, description: 'The Prism mock' }];
  return copy;
}

function withoutKey(value: Json, key: string): Json {
  if (Array.isArray(value)) return value.map((v) => withoutKey(v, key));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).filter(([k]) => k !== key).map(([k, v]) => [k, withoutKey(v, key)]),
    );
  }
  return value;
}
