import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { beginRequest } from '../request-scope.ts';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Echoes a caller's well-formed `x-request-id`, or mints one; the request's log lines, and a process fault while it runs, name it. */
export function createRequestId(): RequestHandler {
  return function requestId(req, res, next) {
    const incoming = req.get('x-request-id');
    const id = incoming && SAFE_ID.test(incoming) ? incoming : randomUUID();
    res.set('x-request-id', id);
    beginRequest(res, { requestId: id, zdr: String(req.headers['x-service-zdr']).toLowerCase() === 'true' });
    next();
  };
}
