import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';

/** Every setting the service reads, from the environment, validated once at start. README lists them. */
export interface Config {
  host: string;
  port: number;
  bodyLimitBytes: number;
  /** A key accepted in addition to the stored ones (scripts, tests); kept in memory only. */
  apiKey: string | undefined;
  keysFile: string;
  /** Shared state for several instances; unset: the embedded store (keys file + memory). */
  redisUrl: string | undefined;
  cache: {
    /** `key`: each key sees only its own cached answers; `global`: all keys share them. */
    scope: 'key' | 'global';
    ttlSeconds: number;
    /** Bound of the embedded cache (least recently used out first); Redis bounds itself. */
    maxEntries: number;
  };
  credits: {
    /** Credits per 1,000 tokens; a request costs ceil(prompt × p + completion × c) / 1000. */
    per1kPromptTokens: number;
    per1kCompletionTokens: number;
  };
  /** Per-key limits for keys without their own; null: none. */
  defaultLimits: { rpm: number | null; tpm: number | null };
  validateResponses: boolean;
  engine: 'local' | 'upstream';
  local: {
    modelPath: string;
    contextSize: number;
    threads: number;
    parallel: number;
  };
  upstream: {
    baseUrl: string | undefined;
    apiKey: string | undefined;
    model: string;
    timeoutMs: number;
    answerTimeoutMs: number;
    concurrency: number;
    /** The upstream model reads images (`image_url` parts); false for a text-only one. */
    vision: boolean;
  };
  /** On SIGTERM, how long requests in flight may take to finish before they are ended cleanly. */
  shutdownGraceMs: number;
  /** Requests that may wait for a generation slot before 503 `queue_full`. */
  queueMaxWaiting: number;
  attachments: {
    /** Largest decoded image, in pixels (width × height), checked from its header before decoding. */
    imageMaxPixels: number;
    inlineMaxBytes: number;
    urlMaxBytes: number;
    fetchTimeoutMs: number;
    /** Tests only: lets the fetcher reach loopback addresses. */
    fetchAllowLoopback: boolean;
  };
  /** Bounds on the work one file may cause in the built-in tasks. */
  tasks: {
    /** A worker (detection, PDF parsing, OCR, speech) still busy with one file after this is stopped. */
    timeoutMs: number;
    /** Heap of each task's worker process. */
    memoryMb: number;
    pdfMaxPages: number;
    /** Largest total of a PDF's streams once inflated. */
    pdfMaxInflatedBytes: number;
    /** Longest audio transcribed; the rest is not decoded. */
    audioMaxSeconds: number;
  };
  /** The Python of the speech-to-text worker's environment. */
  sttPython: string;
  guard: {
    /** The Python of the text guard's environment. */
    python: string;
    /** The text guard's fitted heads (written by `make setup` from the labelled training set). */
    headsPath: string;
  };
  search: {
    searxngUrl: string | undefined;
    braveApiKey: string | undefined;
    timeoutMs: number;
  };
}

const PROJECT_ROOT = fileURLToPath(new URL('../', import.meta.url));

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  if (env.ENGINE === 'upstream' && !env.UPSTREAM_BASE_URL) {
    throw new ConfigError('ENGINE=upstream needs UPSTREAM_BASE_URL (the upstream API base, e.g. http://host:8000/v1)');
  }
  httpUrl(env, 'UPSTREAM_BASE_URL');
  httpUrl(env, 'SEARXNG_URL');
  return {
    host: env.HOST ?? '127.0.0.1',
    port: integer(env, 'PORT', 8080, 0, 65535),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 20 * 1024 * 1024, 1, 2 ** 31),
    apiKey: env.SERVICE_API_KEY || undefined,
    keysFile: env.KEYS_FILE ?? `${PROJECT_ROOT}data/keys.json`,
    redisUrl: env.REDIS_URL || undefined,
    cache: {
      scope: oneOf(env, 'CACHE_SCOPE', ['key', 'global'] as const, 'key'),
      ttlSeconds: integer(env, 'CACHE_TTL_SECONDS', 3600, 1, 31_536_000),
      maxEntries: integer(env, 'CACHE_MAX_ENTRIES', 1000, 0, 10_000_000),
    },
    credits: {
      per1kPromptTokens: decimal(env, 'CREDITS_PER_1K_PROMPT_TOKENS', 1),
      per1kCompletionTokens: decimal(env, 'CREDITS_PER_1K_COMPLETION_TOKENS', 2),
    },
    defaultLimits: {
      rpm: optionalInteger(env, 'DEFAULT_RPM', 1, 1_000_000_000),
      tpm: optionalInteger(env, 'DEFAULT_TPM', 1, 1_000_000_000_000),
    },
    validateResponses: boolean(env, 'VALIDATE_RESPONSES', env.NODE_ENV !== 'production'),
    engine: oneOf(env, 'ENGINE', ['local', 'upstream'] as const, env.UPSTREAM_BASE_URL ? 'upstream' : 'local'),
    local: {
      modelPath: env.MODEL_PATH || `${PROJECT_ROOT}models/SmolLM2-135M-Instruct.Q4_1.gguf`,
      contextSize: integer(env, 'CONTEXT_SIZE', 4096, 256, 1_048_576),
      threads: integer(env, 'THREADS', availableParallelism(), 1, 256),
      parallel: integer(env, 'PARALLEL', 2, 1, 64),
    },
    upstream: {
      baseUrl: env.UPSTREAM_BASE_URL || undefined,
      apiKey: env.UPSTREAM_API_KEY || undefined,
      model: env.UPSTREAM_MODEL || 'service',
      timeoutMs: integer(env, 'UPSTREAM_TIMEOUT_MS', 60_000, 1, 3_600_000),
      answerTimeoutMs: integer(env, 'UPSTREAM_ANSWER_TIMEOUT_MS', 600_000, 1, 3_600_000),
      concurrency: integer(env, 'UPSTREAM_CONCURRENCY', 16, 1, 1024),
      vision: boolean(env, 'UPSTREAM_VISION', true),
    },
    queueMaxWaiting: integer(env, 'QUEUE_MAX_WAITING', 32, 0, 100_000),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, 3_600_000),
    attachments: {
      imageMaxPixels: integer(env, 'IMAGE_MAX_PIXELS', 40_000_000, 1, 2 ** 31),
      inlineMaxBytes: integer(env, 'INLINE_FILE_LIMIT_BYTES', 20_000_000, 1, 2 ** 31),
      urlMaxBytes: integer(env, 'URL_FILE_LIMIT_BYTES', 80_000_000, 1, 2 ** 31),
      fetchTimeoutMs: integer(env, 'FETCH_TIMEOUT_MS', 15_000, 1, 600_000),
      fetchAllowLoopback: boolean(env, 'FETCH_ALLOW_LOOPBACK', false),
    },
    tasks: {
      timeoutMs: integer(env, 'TASK_TIMEOUT_MS', 120_000, 1, 3_600_000),
      memoryMb: integer(env, 'TASK_MEMORY_MB', 1024, 32, 65_536),
      pdfMaxPages: integer(env, 'PDF_MAX_PAGES', 20, 1, 100_000),
      pdfMaxInflatedBytes: integer(env, 'PDF_MAX_INFLATED_BYTES', 256 * 1024 * 1024, 1, 2 ** 40),
      audioMaxSeconds: integer(env, 'AUDIO_MAX_SECONDS', 900, 1, 86_400),
    },
    sttPython: env.STT_PYTHON || `${PROJECT_ROOT}.venv-stt/bin/python`,
    guard: {
      python: env.GUARD_PYTHON || `${PROJECT_ROOT}.venv-guard/bin/python`,
      headsPath: env.GUARD_HEADS || `${PROJECT_ROOT}.cache/guard/heads.json`,
    },
    search: {
      searxngUrl: env.SEARXNG_URL || undefined,
      braveApiKey: env.BRAVE_SEARCH_API_KEY || undefined,
      timeoutMs: integer(env, 'SEARCH_TIMEOUT_MS', 10_000, 1, 600_000),
    },
  };
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** An http(s) URL when set: a typo here would otherwise surface as a 503 on every request. */
function httpUrl(env: NodeJS.ProcessEnv, name: string): void {
  const raw = env[name];
  if (raw === undefined || raw === '') return;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
}

function optionalInteger(env: NodeJS.ProcessEnv, name: string, min: number, max: number): number | null {
  return env[name] === undefined || env[name] === '' ? null : integer(env, name, min, min, max);
}

function decimal(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new ConfigError(`${name} must be a number of 0 or more, got "${raw}"`);
  return value;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  }
  return raw as T;
}
