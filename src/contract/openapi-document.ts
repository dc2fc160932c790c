import { readFileSync } from 'node:fs';
import { projectFile } from '../project-files.ts';
import { parse } from 'yaml';

export const CONTRACT_PATH = projectFile('openapi.yaml');

/** Everything under this prefix belongs to the contract. */
export const BASE_PATH = '/v1';

type Json = unknown;

export function loadContract(path = CONTRACT_PATH): Record<string, Json> {
  return parse(readFileSync(path, 'utf8')) as Record<string, Json>;
}

/**
 * The copy of the contract that express-openapi-validator gets. Three differences, all because of
 * the validator: it rejects every request when a `discriminator` sits in a request body schema
 * (known in 5.6), so discriminators go (each variant is already told apart by its `type` enum,
 * so `oneOf` alone validates the same); it derives its base path from `servers`, which in the
 * contract is a URL template, so the copy names the path alone; and the rules across fields
 * (`allOf` entries of `if`/`then`) go. The validator does apply `if`/`then`, but it reports
 * Ajv's first error alone, which for such a rule misleads: a user message without `content`
 * would read "messages.0.tool_calls: must have required property 'tool_calls'". Those rules are
 * checked by chat/normalize-request.ts, whose message names the rule; src/contract/
 * cross-field-rules.test.ts runs one table of cases against both, so they cannot drift apart.
 */
export function validatorCopy(contract: Record<string, Json>): Record<string, Json> {
  const copy = withoutCrossFieldRules(withoutKey(structuredClone(contract), 'discriminator')) as Record<string, Json>;
  copy.servers = [{ url: BASE_PATH }];
  return copy;
}

/** Drops the `allOf` entries that hold an `if` (a rule across fields), and an `allOf` left empty. */
function withoutCrossFieldRules(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutCrossFieldRules);
  if (!value || typeof value !== 'object') return value;
  const entries = Object.entries(value).flatMap(([k, v]): [string, Json][] => {
    if (k !== 'allOf' || !Array.isArray(v)) return [[k, withoutCrossFieldRules(v)]];
    const kept = v.filter((rule) => !(rule && typeof rule === 'object' && 'if' in rule));
    return kept.length ? [[k, kept.map(withoutCrossFieldRules)]] : [];
  });
  return Object.fromEntries(entries);
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
