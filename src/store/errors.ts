/**
 * A key with the same id or hash exists already: a refusal the store throws to the keys CLI, never
 * answered over HTTP. The store's outage, StoreUnavailableError, lives in src/errors/store-errors.ts.
 */
export class DuplicateKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateKeyError';
  }
}
