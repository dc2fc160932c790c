/**
 * JSON with object keys sorted at every depth, so equal requests give equal text (the cache keys).
 *
 * Written out directly rather than as `JSON.stringify` with a replacer that rebuilt every object
 * from its sorted entries: that made a copy of each object of the request (each message, each
 * part) on every request, and was most of the cache key's cost. The text is the same as the
 * replacer's, byte for byte, so keys stored before still match: the same keys in the same order
 * (an object's array-index keys first, by number, as JavaScript orders them), `toJSON` honoured,
 * `undefined` and functions left out of objects and `null` in arrays.
 */
export function stableJson(value: unknown): string {
  return write(value, '') as string;
}

function write(value: unknown, key: string): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON(key: string): unknown }).toJSON(key);
  }
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + (write(value[i], String(i)) ?? 'null');
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      let out = '{';
      for (const k of sortedKeys(record)) {
        const written = write(record[k], k);
        if (written !== undefined) out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${written}`;
      }
      return `${out}}`;
    }
    case 'bigint':
      return JSON.stringify(value); // throws, as JSON.stringify does
    default:
      return undefined; // undefined, a function, a symbol
  }
}

/** Keys by UTF-16 code units, array-index keys ("0", "12") first by their number: JavaScript's own order of an object built from sorted entries. */
function sortedKeys(record: Record<string, unknown>): string[] {
  const keys = Object.keys(record).sort();
  if (!keys.some(isArrayIndex)) return keys;
  return [...keys.filter(isArrayIndex).sort((a, b) => Number(a) - Number(b)), ...keys.filter((k) => !isArrayIndex(k))];
}

const isArrayIndex = (key: string) => {
  const first = key.charCodeAt(0);
  if (first < 48 || first > 57) return false;
  const n = Number(key);
  return Number.isInteger(n) && n < 2 ** 32 - 1 && String(n) === key;
};
