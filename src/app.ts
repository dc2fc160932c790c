import { existsSync } from 'node:fs';
import cors from 'cors';
import express, { type Express } from 'express';
import type { Logger as Pino } from 'pino';
import * as OpenApiValidator from 'express-openapi-validator';
import { createChatCompletionHandler } from './api/create-chat-completion.ts';
import { createListModelsHandler } from './api/list-models.ts';
import { createCompletionPipeline, type PipelineDeps } from './chat/create-pipeline.ts';
import type { Logger } from './logging.ts';
import { newCompletionId } from './api/completion-id.ts';
import { BASE_PATH, loadContract, validatorCopy } from './contract/openapi-document.ts';
import type { Engine } from './engines/engine.ts';
import type { Guard } from './guard/guard.ts';
import type { AttachmentLimits } from './inputs/attachments.ts';
import type { TaskRegistry } from './tasks/registry.ts';
import { createErrorHandler } from './http/errors.ts';
import { notFound } from './errors/service-error.ts';
import { createBearerAuth } from './middleware/bearer-auth.ts';
import type { CallerResolver } from './keys/caller.ts';
import type { QuotaOptions } from './chat/stages/quota.ts';
import type { CacheOptions } from './chat/stages/verified-cache.ts';
import type { SchemaLimits } from './engines/schema-budget.ts';
import type { Store } from './store/store.ts';
import { createJsonBody } from './middleware/json-body.ts';
import { Drain } from './http/drain.ts';
import { createRequestId } from './middleware/request-id.ts';
import { operationalRoutes, Readiness } from './http/health.ts';
import type { Metrics } from './http/metrics.ts';
import { requestLog } from './http/request-log.ts';

export interface AppDeps {
  engine: Engine;
  tasks: TaskRegistry;
  attachmentLimits: AttachmentLimits;
  /** Bounds on a request's JSON Schemas (`SCHEMA_MAX_*`); absent: the defaults. */
  schemaLimits?: SchemaLimits;
  keys: CallerResolver;
  /** Balances, rate counters and the verified cache (embedded or Redis). */
  store: Store;
  quota: QuotaOptions;
  cache: CacheOptions;
  /** `CACHE_MODE=semantic`: the encoder and δ of the semantic layer behind the exact cache. */
  semantic?: PipelineDeps['semantic'];
  bodyLimitBytes: number;
  validateResponses: boolean;
  log?: Logger;
  newCompletionId?: () => string;
  /** The requests in flight, for a graceful shutdown. */
  drain?: Drain;
  /** The content guard for `<guard>` (main.ts always has one; most tests need none). */
  guard?: Guard;
  /** Writes one line per request (absent: no request log). */
  requestLogger?: Pino;
  /** Observes every completion; `GET /metrics` unless `metricsElsewhere` (METRICS_PORT serves it). */
  metrics?: Metrics;
  metricsElsewhere?: boolean;
  /** For `GET /readyz`; absent: ready at once, the store pinged. */
  readiness?: Readiness;
  /** Browser origins allowed by CORS (`CORS_ORIGINS`); none: no CORS headers at all. */
  corsOrigins?: string[];
  /** The rendered API reference (`make docs`), served at `/docs` without a key. */
  docsFile?: string;
}

/** The headers a browser app may read from an answer: the request id, rate limits, Retry-After. */
const EXPOSED_HEADERS = ['x-request-id', 'retry-after', 'x-ratelimit-limit-requests', 'x-ratelimit-limit-tokens',
  'x-ratelimit-remaining-requests', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens'];

/**
 * The whole request path, in order. Authentication runs before the body is parsed or validated,
 * so a caller without a key learns nothing about the contract and costs no parsing.
 */
export function createApp(deps: AppDeps): Express {
  const log = deps.log ?? console;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // every answer is new: hashing its body for an ETag is wasted work

  app.use(createRequestId());
  if (deps.requestLogger) app.use(requestLog(deps.requestLogger));
  if (deps.metrics) app.use(deps.metrics.middleware());
  // Before authentication: a browser's preflight carries no key.
  if (deps.corsOrigins?.length) {
    app.use(cors({ origin: deps.corsOrigins.includes('*') ? '*' : deps.corsOrigins, exposedHeaders: EXPOSED_HEADERS, maxAge: 600 }));
  }
  app.use(operationalRoutes(deps.readiness ?? readyAtOnce(deps.store, log), deps.metricsElsewhere ? undefined : deps.metrics));
  if (deps.docsFile) app.get('/docs', apiReference(deps.docsFile));
  app.use(createBearerAuth(deps.keys));
  app.use(createJsonBody(deps.bodyLimitBytes));
  app.use(
    OpenApiValidator.middleware({
      apiSpec: validatorCopy(loadContract()) as never,
      validateRequests: true,
      validateResponses: deps.validateResponses,
      validateSecurity: false,
    }),
  );
  app.post(
    `${BASE_PATH}/chat/completions`,
    createChatCompletionHandler({
      complete: createCompletionPipeline(deps),
      attachmentLimits: deps.attachmentLimits,
      ...(deps.schemaLimits ? { schemaLimits: deps.schemaLimits } : {}),
      drain: deps.drain ?? new Drain(),
      newCompletionId: deps.newCompletionId ?? newCompletionId,
      log,
      engineKind: deps.engine.kind ?? 'engine',
      ...(deps.metrics ? { openRequests: deps.metrics.openRequests, charged: deps.metrics.charged } : {}),
    }),
  );
  app.get(`${BASE_PATH}/models`, createListModelsHandler());
  app.use((req, _res, next) => next(notFound(`Unknown URL: ${req.method} ${req.path}`)));
  app.use(createErrorHandler(log));
  return app;
}

function readyAtOnce(store: Store, log: Logger): Readiness {
  const readiness = new Readiness({ store: () => store.ping() }, log);
  readiness.started();
  return readiness;
}

/** `GET /docs`: the API reference page (one self-contained file; its navigation is in the URL's hash). */
export function apiReference(file: string): express.RequestHandler {
  return (_req, res, next) => {
    if (!existsSync(file)) return next(notFound('The API reference is not built here: run make docs.'));
    res.sendFile(file, { dotfiles: 'allow' }); // it lives under .cache/
  };
}
