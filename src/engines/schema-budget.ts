import { invalidRequest } from '../errors/service-error.ts';

/**
 * Bounds on the JSON Schemas of one request (`response_format` and every tool's `parameters`,
 * together): each is compiled by Ajv and turned into a grammar on the event loop, in time that
 * grows with its size, and walked by recursive code that a deep one would overflow.
 */
export interface SchemaLimits {
  /** `SCHEMA_MAX_BYTES`: the schemas' JSON, in UTF-8 bytes, all together. */
  maxBytes: number;
  /** `SCHEMA_MAX_DEPTH`: nesting of objects and arrays within one schema. */
  maxDepth: number;
  /** `SCHEMA_MAX_KEYWORDS`: object keys and array items, all schemas together. */
  maxKeywords: number;
}

export const DEFAULT_SCHEMA_LIMITS: SchemaLimits = { maxBytes: 256 * 1024, maxDepth: 64, maxKeywords: 20_000 };

/** What the schemas of one request have used of their limits so far. */
export interface SchemaBudget {
  /** 400 `invalid_json_schema` (naming `param` and the bound) when `schema` takes the request past a limit. */
  charge(schema: unknown, param: string): void;
}

export function schemaBudget(limits: SchemaLimits): SchemaBudget {
  let bytes = 0;
  let keywords = 0;
  const refuse = (param: string, what: string, setting: string) =>
    invalidRequest(`${param}: the request's JSON Schemas exceed ${what} (${setting}).`, 'invalid_json_schema', param);
  return {
    charge(schema, param) {
      // Without recursion, stopping at the first bound passed: the walk itself must be bounded.
      const stack: { value: unknown; depth: number }[] = [{ value: schema, depth: 1 }];
      while (stack.length > 0) {
        const { value, depth } = stack.pop()!;
        if (value === null || typeof value !== 'object') continue;
        if (depth > limits.maxDepth) throw refuse(param, `depth ${limits.maxDepth}`, 'SCHEMA_MAX_DEPTH');
        const children = Array.isArray(value) ? value : Object.values(value);
        keywords += children.length;
        if (keywords > limits.maxKeywords) throw refuse(param, `${limits.maxKeywords} keywords (object keys and array items)`, 'SCHEMA_MAX_KEYWORDS');
        for (const child of children) stack.push({ value: child, depth: depth + 1 });
      }
      // Bounded in depth now, so serialising it cannot overflow the stack.
      bytes += Buffer.byteLength(JSON.stringify(schema) ?? '');
      if (bytes > limits.maxBytes) throw refuse(param, `${limits.maxBytes} bytes`, 'SCHEMA_MAX_BYTES');
    },
  };
}
