import type { RequestHandler } from 'express';
import { authenticationFailed } from '../http/errors.ts';

export interface KeyVerifier {
  verify(key: string): boolean;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** 401 `authentication_error` / `invalid_api_key` unless `Authorization: Bearer <key>` holds a live key. */
export function createBearerAuth(keys: KeyVerifier): RequestHandler {
  return function bearerAuth(req, _res, next) {
    const header = req.get('authorization');
    if (!header) {
      return next(authenticationFailed('Missing API key. Send it as "Authorization: Bearer <API_KEY>".'));
    }
    const key = BEARER.exec(header)?.[1];
    if (!key || !keys.verify(key)) {
      return next(authenticationFailed('Invalid API key. Send a valid key as "Authorization: Bearer <API_KEY>".'));
    }
    next();
  };
}
