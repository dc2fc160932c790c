import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AppDeps, createApp } from '../app.ts';
import { createScriptedEngine, echoScript } from '../engines/scripted-engine.ts';
import { ApiKeys } from '../keys/api-keys.ts';
import { createLogger, loggerOn } from '../logging.ts';
import { createEmbeddedStore } from '../store/embedded-store.ts';
import type { Store } from '../store/store.ts';
import { TaskRegistry } from '../tasks/registry.ts';
import { testAttachmentLimits } from './attachment-limits.ts';

export const TEST_KEY = 'sk-test-key';

export interface TestServer {
  baseUrl: string;
  keys: ApiKeys;
  store: Store;
  /** The embedded store's keys file (in a temp dir of its own). */
  keysFile: string;
  logged: unknown[][];
  close(): Promise<void>;
}

/**
 * Boots the real app on a loopback port (an ephemeral one unless `port` is given: a bench's child
 * server is told its port), with a scripted engine unless one is given, an embedded store of its
 * own, no prices and no limits unless given.
 */
export async function startTestServer(overrides: Partial<AppDeps> = {}, port = 0): Promise<TestServer> {
  // The service's own JSON logger, its lines kept (one string each): what a test reads is what
  // an operator would, request id and key id included.
  const logged: unknown[][] = [];
  const log = loggerOn(createLogger('warn', { write: (line: string) => void logged.push([line.trimEnd()]) }));
  const keysFile = join(mkdtempSync(join(tmpdir(), 'keys-')), 'keys.json');
  const store = overrides.store ?? createEmbeddedStore({ file: keysFile, cacheMaxEntries: 100, log });
  const keys = new ApiKeys(store, [TEST_KEY]);
  const app = createApp({
    engine: createScriptedEngine(echoScript),
    tasks: new TaskRegistry([]),
    attachmentLimits: testAttachmentLimits(),
    keys,
    store,
    quota: { prices: { prompt: 0, completion: 0 }, defaults: { rpm: null, tpm: null } },
    cache: { scope: 'key', ttlSeconds: 60 },
    bodyLimitBytes: 1024 * 1024,
    validateResponses: true,
    log,
    ...overrides,
  });
  const server = app.listen(port, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    keys,
    store,
    keysFile,
    logged,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function postCompletion(baseUrl: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TEST_KEY}`, 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export const hello = { model: 'service', messages: [{ role: 'user', content: 'hello there' }] } as const;
