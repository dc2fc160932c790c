import { Router } from 'express';
import type { Metrics } from './metrics.ts';
import type { Logger } from '../logging.ts';

/** A dependency readiness depends on: resolves when it can serve, throws (or times out) when not. */
export type Probe = () => Promise<void>;

const PROBE_TIMEOUT_MS = 2000;

/**
 * Whether this instance should get traffic: not while it starts (models loading, workers warming)
 * or drains, nor while a probe (the store) fails. Liveness is separate: a live instance that is
 * not ready must not be restarted for it.
 */
export class Readiness {
  private state: 'starting' | 'ready' | 'draining' = 'starting';
  /**
   * The checks failing at the last poll: a cause is logged when its check starts failing, not at
   * every poll. Not once per new message: one outage words itself differently from poll to poll
   * (a Redis client says "max retries" and then "reconnecting"), which would log at every poll.
   */
  private readonly failing = new Set<string>();

  /** `log` gets a failing check's cause, which `/readyz` (no key needed) never shows. */
  constructor(private readonly probes: Record<string, Probe> = {}, private readonly log: Logger = console) {}

  started(): void {
    if (this.state === 'starting') this.state = 'ready';
  }

  draining(): void {
    this.state = 'draining';
  }

  /**
   * Each check as `ok` or `failing`, nothing more: a cause names hosts, ports, users and files
   * (Redis's URL, the keys file's path), so it goes to the log, once each time a check starts failing.
   */
  async report(): Promise<{ ready: boolean; status: string; checks: Record<string, 'ok' | 'failing'> }> {
    const checks: Record<string, 'ok' | 'failing'> = {};
    await Promise.all(Object.entries(this.probes).map(async ([name, probe]) => {
      const cause = await withTimeout(probe()).then(() => undefined, (err: unknown) => (err instanceof Error ? err.message : String(err)));
      checks[name] = cause === undefined ? 'ok' : 'failing';
      if (cause !== undefined && !this.failing.has(name)) this.log.warn(`readiness check ${name} failing: ${cause}`);
      if (cause === undefined) this.failing.delete(name);
      else this.failing.add(name);
    }));
    const failing = Object.values(checks).some((c) => c !== 'ok');
    const status = this.state !== 'ready' ? this.state : failing ? 'unready' : 'ready';
    return { ready: status === 'ready', status, checks };
  }
}

function withTimeout(work: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer in ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS)));
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The operational endpoints, outside `/v1` and without a key: `GET /healthz` (the process
 * answers), `GET /readyz` (it should get traffic: 200, else 503) and, given metrics, `GET /metrics`
 * in Prometheus's text format.
 */
export function operationalRoutes(readiness: Readiness, metrics?: Metrics): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  router.get('/readyz', async (_req, res) => {
    const report = await readiness.report();
    res.status(report.ready ? 200 : 503).json({ status: report.status, checks: report.checks });
  });
  if (metrics) router.get('/metrics', async (_req, res) => void res.type(metrics.registry.contentType).send(await metrics.text()));
  return router;
}
