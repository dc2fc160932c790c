import type { RequestHandler } from 'express';
import { authenticationFailed } from '../errors/service-error.ts';
import type { CallerResolver } from '../keys/caller.ts';
import { setRequestKey } from '../request-scope.ts';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * 401 `authentication_error` / `invalid_api_key` unless `Authorization: Bearer <key>` holds a live
 * key; the caller it belongs to is put on `res.locals.caller` for the handler's context.
 */
export function createBearerAuth(keys: CallerResolver): RequestHandler {
  return async function bearerAuth(req, res, next) {
    const header = req.get('authorization');
    if (!header) {
      return next(authenticationFailed('Missing API key. Send it as "Authorization: Bearer <API_KEY>".'));
    }
    const key = BEARER.exec(header)?.[1];
    const caller = key === undefined ? undefined : await keys.resolve(key);
    if (!caller) {
      return next(authenticationFailed('Invalid API key. Send a valid key as "Authorization: Bearer <API_KEY>".'));
    }
    res.locals.caller = caller;
    setRequestKey(res, caller.keyId); // the request's log lines name its key from here on
    next();
  };
}
