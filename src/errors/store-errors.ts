import { serviceUnavailable } from './service-error.ts';

/**
 * The store (keys file, Redis) cannot be reached or used right now; the operation may be retried
 * later. Not a ServiceError where it is thrown: its `code` is the store's own reason
 * (`store_locked`, `keys_file_invalid`, `keys_folder_unavailable`, `store_unavailable`), which the
 * keys CLI and the store's tests read, while every HTTP caller is answered the one 503
 * `store_unavailable` of `storeUnavailable` below.
 */
export class StoreUnavailableError extends Error {
  readonly code: string;
  constructor(message: string, code = 'store_unavailable', options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreUnavailableError';
    this.code = code;
  }
}

/** The shared store cannot be reached: keys, balances and limits cannot be checked, so no 401, 402 or 429 is true. */
export const storeUnavailable = (outage: StoreUnavailableError) =>
  serviceUnavailable(`The account store is unreachable (${outage.message}); retry shortly.`, 'store_unavailable', 2);
