import { ServiceError } from './service-error.ts';
import { StoreUnavailableError, storeUnavailable } from './store-errors.ts';

/**
 * The answer to an error the service itself threw, or undefined for a foreign one (a library's),
 * which src/http/errors.ts maps. Every own error is a ServiceError where it is thrown except the
 * store's outage, whose reason code the store's callers read; it is answered here, beside its factory.
 */
export function answerOf(err: unknown): ServiceError | undefined {
  if (err instanceof ServiceError) return err;
  if (err instanceof StoreUnavailableError) return storeUnavailable(err);
  return undefined;
}
