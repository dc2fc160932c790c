import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Echoes a caller's well-formed `x-request-id`, or mints one; errors are logged under it. */
export function createRequestId(): RequestHandler {
  return function requestId(req, res, next) {
    const incoming = req.get('x-request-id');
    res.set('x-request-id', incoming && SAFE_ID.test(incoming) ? incoming : randomUUID());
    next();
  };
}
