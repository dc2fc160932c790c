import type { RequestHandler } from 'express';
import type { ModelList } from '../contract/wire-types.ts';

/**
 * Handler for operation `listModels`, a compatibility extension: the one model under both of its
 * spellings, dated from the deployment's start.
 */
export function createListModelsHandler(startedAt = Math.floor(Date.now() / 1000)): RequestHandler {
  const list: ModelList = {
    object: 'list',
    data: (['service', 'service-beta'] as const).map((id) => ({ id, object: 'model', created: startedAt, owned_by: 'service' })),
  };
  return function listModels(_req, res) {
    res.json(list);
  };
}
