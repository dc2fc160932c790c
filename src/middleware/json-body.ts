import express, { type RequestHandler } from 'express';
import { unsupportedCharset } from '../errors/service-error.ts';

/**
 * The JSON body, UTF-8 only (RFC 8259 §8.1), inflated when sent with `Content-Encoding` gzip,
 * deflate or br, bounded by `limitBytes` after inflation. body-parser alone would decode any
 * `utf-*` charset iconv knows, UTF-7 included.
 */
export function createJsonBody(limitBytes: number): RequestHandler[] {
  return [requireUtf8, express.json({ limit: limitBytes })];
}

const requireUtf8: RequestHandler = function requireUtf8(req, _res, next) {
  const charset = (req.get('content-type') ?? '')
    .split(';')
    .slice(1)
    .map((param) => param.trim().toLowerCase())
    .find((param) => param.startsWith('charset='))
    ?.slice('charset='.length)
    .replaceAll('"', '');
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return next();
  next(unsupportedCharset(charset));
};
