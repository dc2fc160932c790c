/**
 * Errors the store throws on purpose, so the HTTP layer can tell "the operator must act" (503)
 * from a bug (500) without knowing which backend is in use.
 */

/** The backend cannot be reached or used right now; the operation may be retried later. */
export class StoreUnavailableError extends Error {
  readonly code: string;
  constructor(message: string, code = 'store_unavailable', options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
    this.code = code;
  }
}

/** A key with the same id or hash exists already. */
export class DuplicateKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateKeyError';
  }
}
