import type { RequestHandler } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { outcomeOf, type RequestEnd, type RequestOutcome } from './request-outcome.ts';
import type { Logger } from '../logging.ts';

const SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/**
 * The service's Prometheus metrics (prom-client), read at `GET /metrics`: requests by status and
 * error code, latency and time to first token, tokens, the generation queue, the verified cache,
 * guard blocks, credit and rate-limit refusals, upstream errors, and the process's own.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = this.counter('service_requests_total', 'Chat completion requests, by status and error code (none: "")', ['status', 'code']);
  private readonly latency = this.histogram('service_request_duration_seconds', 'From arrival to the last byte, by stream or not', ['stream']);
  private readonly ttft = this.histogram('service_time_to_first_token_seconds', 'From arrival to the first text, reasoning or tool call', ['stream']);
  private readonly tokens = this.counter('service_tokens_total', 'Tokens read (prompt) and written (completion)', ['kind']);
  private readonly cache = this.counter('service_cache_requests_total', 'Verified cache: hit, miss, or bypass (x-service-bypass-cache)', ['result']);
  private readonly guardBlocks = this.counter('service_guard_blocks_total', 'Guarded requests or answers blocked, by matched code', ['code']);
  private readonly refusals = this.counter('service_refusals_total', 'Requests refused for credits (402) or rate limits (429)', ['reason']);
  private readonly credits = new Histogram({
    name: 'service_credits_charged',
    help: 'Credits each request was charged once settled, by how it ended: answered (its usage says it), client_left or failed (no usage: only here)',
    labelNames: ['ended'],
    buckets: [0, 1, 10, 100, 1000, 10000, 100000],
    registers: [this.registry],
  });
  private readonly upstreamErrors = this.counter('service_upstream_errors_total', 'Errors from the upstream model, by code', ['code']);
  private readonly queueWaiting = new Gauge({ name: 'service_queue_waiting', help: 'Requests waiting for a generation slot', registers: [this.registry] });
  private readonly queueWait = this.histogram('service_queue_wait_seconds', 'How long a generation waited for its slot', []);
  private readonly open = new Gauge({
    name: 'service_requests_open',
    help: 'Chat completion requests not yet ended: from arrival until the answer is written and the credits settled (0 when idle; more is a request that never ended)',
    registers: [this.registry],
  });

  /** `log`: where a metric that could not be recorded is reported (never thrown: see middleware). */
  constructor(private readonly log: Logger = console) {
    collectDefaultMetrics({ register: this.registry });
  }

  /**
   * Observes each chat completion request when its response ends. The observation runs in a
   * 'close' listener, where a throw would be an uncaught exception and end the process: it reads
   * the record defensively, and whatever still fails loses a metric, never the process.
   */
  middleware(): RequestHandler {
    return (req, res, next) => {
      const outcome = outcomeOf(res);
      if (req.method === 'POST' && req.path.endsWith('/chat/completions')) {
        res.once('close', () => {
          try {
            this.observe(res.statusCode, outcome);
          } catch (err) {
            this.log.error('a request\'s metrics were not recorded:', err);
          }
        });
      }
      next();
    };
  }

  /** The generation queue reports here (engines/queued-engine.ts). */
  readonly queue = {
    waiting: (count: number) => this.queueWaiting.set(count),
    waited: (ms: number) => this.queueWait.observe({}, ms / 1000),
  };

  /** The chat completion handler reports here when a request starts and when it has wholly ended. */
  readonly openRequests = {
    opened: () => this.open.inc(),
    closed: () => this.open.dec(),
  };

  /** The chat completion handler reports here each request's settled charge, when it has wholly ended. */
  readonly charged = (credits: number, ended: RequestEnd) => this.credits.observe({ ended }, credits);

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  private observe(status: number, outcome: RequestOutcome): void {
    const stream = String(outcome.stream === true);
    // Labels as strings and amounts as finite non-negative numbers, whatever the record holds.
    const code = outcome.error ? String(outcome.error.code) : '';
    const type = outcome.error ? String(outcome.error.type) : '';
    this.requests.inc({ status: String(status), code });
    this.latency.observe({ stream }, (performance.now() - outcome.startedAt) / 1000);
    if (isAmount(outcome.ttftMs)) this.ttft.observe({ stream }, outcome.ttftMs / 1000);
    if (isAmount(outcome.promptTokens) && outcome.promptTokens > 0) this.tokens.inc({ kind: 'prompt' }, outcome.promptTokens);
    if (isAmount(outcome.completionTokens) && outcome.completionTokens > 0) this.tokens.inc({ kind: 'completion' }, outcome.completionTokens);
    if (outcome.cache) this.cache.inc({ result: String(outcome.cache) });
    for (const matched of new Set(outcome.guardMatched ?? [])) this.guardBlocks.inc({ code: String(matched) });
    if (type === 'insufficient_quota') this.refusals.inc({ reason: 'credits' });
    if (type === 'rate_limit_error') this.refusals.inc({ reason: 'rate_limit' });
    if (code.startsWith('upstream_')) this.upstreamErrors.inc({ code });
  }

  private counter<L extends string>(name: string, help: string, labelNames: L[]) {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: L[]) {
    return new Histogram({ name, help, labelNames, buckets: SECONDS, registers: [this.registry] });
  }
}

const isAmount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
