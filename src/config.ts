import { availableParallelism } from 'node:os';
import type { TaskUnits } from './chat/prices.ts';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DEFAULT_SCHEMA_LIMITS } from './engines/schema-budget.ts';
import type { PageLimits } from './tasks/scraper/html-page.ts';

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
    /** Bound of the embedded cache in bytes (key and value, UTF-8); Redis: its own maxmemory. */
    maxBytes: number;
    /** An entry of more bytes is never stored, on either backend. */
    maxEntryBytes: number;
    /** `semantic`: behind the exact cache, paraphrases of deterministic requests answered under the bound. */
    mode: 'exact' | 'semantic';
    /** δ: the largest estimated probability of a wrong semantic hit. */
    maxError: number;
    /** The share of would-be semantic hits generated fresh and compared. */
    verifyShare: number;
  };
  credits: {
    /** Credits per 1,000 tokens; a request costs ceil(prompt × p + completion × c) / 1000. */
    per1kPromptTokens: number;
    per1kCompletionTokens: number;
    /** Credits per unit of each task's work (src/chat/prices.ts says why each unit). */
    perUnit: Required<TaskUnits>;
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
    /** Tokens a request without `max_tokens` may generate; a caller may still ask up to the contract's 32000. */
    defaultMaxTokens: number;
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
  /** The JSON log's level (pino's: fatal, error, warn, info, debug, trace, silent). */
  logLevel: string;
  /** `GET /metrics` on this port instead of the service's own (same host); unset: the service's port. */
  metricsPort: number | undefined;
  /** Browser origins allowed by CORS (`https://app.example.com`, or `*` for any); none: no CORS. */
  corsOrigins: string[];
  /** The rendered API reference served at `/docs` (built by the setup from openapi.yaml). */
  docsFile: string;
  /** Requests that may wait for a generation slot before 503 `queue_full`. */
  queueMaxWaiting: number;
  /** Bounds on a request's JSON Schemas (response_format and tools together), 400 above them. */
  schemas: { maxBytes: number; maxDepth: number; maxKeywords: number };
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
    /** `TASK_QUEUE_MAX`: jobs that may wait for one engine (OCR, a detector, the guard, translation…). */
    queueMax: number;
    /** `TASK_QUEUE_PER_CALLER`: jobs one API key may have waiting or running on one engine. */
    queuePerCaller: number;
    pdfMaxPages: number;
    /** Largest total of a PDF's streams once inflated. */
    pdfMaxInflatedBytes: number;
    /** Longest audio transcribed; the rest is not decoded. */
    audioMaxSeconds: number;
    /** Longest video read; a longer one is refused. */
    videoMaxSeconds: number;
    /** Frames sampled from a video, evenly spaced, for OCR and object detection. */
    videoMaxFrames: number;
    /** Largest total of an office document's parts once inflated (it is a zip). */
    documentMaxInflatedBytes: number;
    /** Pictures inside one office document sent to OCR; the rest are counted, not read. */
    documentMaxImages: number;
  };
  /** Bounds on what the scraper reads of one page (README, "Scraper"). */
  scraper: PageLimits;
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

// Each setting as zod reads it from its environment variable; an empty value counts as unset.
const unset = <T extends z.ZodType>(schema: T) => z.preprocess((raw) => (raw === '' ? undefined : raw), schema.optional());
const integer = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return unset(z.coerce.number({ error }).int({ error }).min(min, { error }).max(max, { error }));
};
const decimal = () => unset(z.coerce.number({ error: 'must be a number of 0 or more' }).min(0, { error: 'must be a number of 0 or more' }));
const share = () => unset(z.coerce.number({ error: 'must be a number from 0 to 1' }).min(0, { error: 'must be a number from 0 to 1' }).max(1, { error: 'must be a number from 0 to 1' }));
const flag = () => unset(z.enum(['true', 'false', '1', '0'], { error: 'must be true or false' }).transform((v) => v === 'true' || v === '1'));
const oneOf = <T extends string>(values: readonly [T, ...T[]]) => unset(z.enum(values, { error: `must be one of ${values.join(', ')}` }));
/** An http(s) URL: a typo here would otherwise surface as a 503 on every request. */
const httpUrl = () => unset(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }));
const text = () => unset(z.string());
/** A comma-separated list of origins (scheme://host[:port]) or `*`. */
const origins = () => unset(z.string()).transform((raw, ctx) => {
  const listed = (raw ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  for (const origin of listed) {
    if (origin !== '*' && !isOrigin(origin)) ctx.addIssue({ code: 'custom', message: 'must list origins such as https://app.example.com (or *)' });
  }
  return listed;
});
const isOrigin = (origin: string) => URL.canParse(origin) && /^https?:$/.test(new URL(origin).protocol) && new URL(origin).origin === origin;

const ENV = z.object({
  HOST: text(), PORT: integer(0, 65535), BODY_LIMIT_BYTES: integer(1, 2 ** 31),
  SERVICE_API_KEY: text(), KEYS_FILE: text(), REDIS_URL: text(),
  CACHE_SCOPE: oneOf(['key', 'global']), CACHE_TTL_SECONDS: integer(1, 31_536_000), CACHE_MAX_ENTRIES: integer(0, 10_000_000),
  CACHE_MAX_BYTES: integer(0, 2 ** 48), CACHE_MAX_ENTRY_BYTES: integer(1, 512 * 1024 * 1024), // 512 MiB: Redis's largest string
  CACHE_MODE: oneOf(['exact', 'semantic']), CACHE_MAX_ERROR: share(), CACHE_VERIFY_SHARE: share(),
  CREDITS_PER_1K_PROMPT_TOKENS: decimal(), CREDITS_PER_1K_COMPLETION_TOKENS: decimal(),
  CREDITS_PER_OCR_PAGE: decimal(), CREDITS_PER_DETECTED_IMAGE: decimal(), CREDITS_PER_AUDIO_SECOND: decimal(),
  CREDITS_PER_SEARCH: decimal(), CREDITS_PER_PAGE_FETCHED: decimal(), CREDITS_PER_1K_TRANSLATED_CHARS: decimal(),
  DEFAULT_RPM: integer(1, 1_000_000_000), DEFAULT_TPM: integer(1, 1_000_000_000_000),
  NODE_ENV: text(), VALIDATE_RESPONSES: flag(),
  ENGINE: oneOf(['local', 'upstream']),
  MODEL_PATH: text(), CONTEXT_SIZE: integer(256, 1_048_576), THREADS: integer(1, 256), PARALLEL: integer(1, 64),
  DEFAULT_MAX_TOKENS: integer(1, 32_000),
  UPSTREAM_BASE_URL: httpUrl(), UPSTREAM_API_KEY: text(), UPSTREAM_MODEL: text(),
  UPSTREAM_TIMEOUT_MS: integer(1, 3_600_000), UPSTREAM_ANSWER_TIMEOUT_MS: integer(1, 3_600_000),
  UPSTREAM_CONCURRENCY: integer(1, 1024), UPSTREAM_VISION: flag(),
  QUEUE_MAX_WAITING: integer(0, 100_000),
  SCHEMA_MAX_BYTES: integer(1, 2 ** 31), SCHEMA_MAX_DEPTH: integer(1, 10_000), SCHEMA_MAX_KEYWORDS: integer(1, 10_000_000),
  SHUTDOWN_GRACE_MS: integer(0, 3_600_000),
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), METRICS_PORT: integer(1, 65535), CORS_ORIGINS: origins(),
  IMAGE_MAX_PIXELS: integer(1, 2 ** 31), INLINE_FILE_LIMIT_BYTES: integer(1, 2 ** 31), URL_FILE_LIMIT_BYTES: integer(1, 2 ** 31),
  FETCH_TIMEOUT_MS: integer(1, 600_000), FETCH_ALLOW_LOOPBACK: flag(),
  TASK_TIMEOUT_MS: integer(1, 3_600_000), TASK_MEMORY_MB: integer(32, 65_536),
  TASK_QUEUE_MAX: integer(0, 100_000), TASK_QUEUE_PER_CALLER: integer(1, 100_000), PDF_MAX_PAGES: integer(1, 100_000),
  PDF_MAX_INFLATED_BYTES: integer(1, 2 ** 40), AUDIO_MAX_SECONDS: integer(1, 86_400),
  VIDEO_MAX_SECONDS: integer(1, 86_400), VIDEO_MAX_FRAMES: integer(1, 64),
  DOCUMENT_MAX_INFLATED_BYTES: integer(1, 2 ** 40), DOCUMENT_MAX_IMAGES: integer(0, 1000),
  SCRAPER_MAX_HTML_BYTES: integer(1, 2 ** 31), SCRAPER_MAX_LINKS: integer(0, 10_000_000), SCRAPER_MAX_TABLES: integer(0, 1_000_000),
  SCRAPER_MAX_TABLE_CELLS: integer(0, 100_000_000), SCRAPER_MAX_METADATA: integer(0, 1_000_000), SCRAPER_MAX_TEXT_CHARS: integer(0, 2 ** 29),
  STT_PYTHON: text(), GUARD_PYTHON: text(), GUARD_HEADS: text(),
  SEARXNG_URL: httpUrl(), BRAVE_SEARCH_API_KEY: text(), SEARCH_TIMEOUT_MS: integer(1, 600_000),
}).refine((env) => env.ENGINE !== 'upstream' || env.UPSTREAM_BASE_URL !== undefined, {
  path: ['ENGINE'], message: 'ENGINE=upstream needs UPSTREAM_BASE_URL (the upstream API base, e.g. http://host:8000/v1)',
});

/** Reads and checks every setting; the first bad one is a ConfigError naming it and its value. */
export function loadConfig(raw: NodeJS.ProcessEnv): Config {
  const parsed = ENV.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    if (issue.code === 'custom' && name === 'ENGINE') throw new ConfigError(issue.message);
    throw new ConfigError(`${name} ${issue.message}, got "${raw[name]}"`);
  }
  const env = parsed.data;
  return {
    host: env.HOST ?? '127.0.0.1',
    port: env.PORT ?? 8080,
    bodyLimitBytes: env.BODY_LIMIT_BYTES ?? 20 * 1024 * 1024,
    apiKey: env.SERVICE_API_KEY,
    keysFile: env.KEYS_FILE ?? `${PROJECT_ROOT}data/keys.json`,
    redisUrl: env.REDIS_URL,
    cache: {
      scope: env.CACHE_SCOPE ?? 'key',
      ttlSeconds: env.CACHE_TTL_SECONDS ?? 3600,
      maxEntries: env.CACHE_MAX_ENTRIES ?? 1000,
      maxBytes: env.CACHE_MAX_BYTES ?? 256 * 1024 * 1024,
      maxEntryBytes: env.CACHE_MAX_ENTRY_BYTES ?? 16 * 1024 * 1024,
      // exact by default: the semantic layer runs an encoder worker and embeds every deterministic miss
      mode: env.CACHE_MODE ?? 'exact',
      maxError: env.CACHE_MAX_ERROR ?? 0.02,
      verifyShare: env.CACHE_VERIFY_SHARE ?? 0.1,
    },
    credits: {
      per1kPromptTokens: env.CREDITS_PER_1K_PROMPT_TOKENS ?? 1,
      per1kCompletionTokens: env.CREDITS_PER_1K_COMPLETION_TOKENS ?? 2,
      perUnit: {
        ocr_pages: env.CREDITS_PER_OCR_PAGE ?? 1,
        detected_images: env.CREDITS_PER_DETECTED_IMAGE ?? 1,
        audio_seconds: env.CREDITS_PER_AUDIO_SECOND ?? 0.05,
        searches: env.CREDITS_PER_SEARCH ?? 2,
        pages_fetched: env.CREDITS_PER_PAGE_FETCHED ?? 1,
        translated_kchars: env.CREDITS_PER_1K_TRANSLATED_CHARS ?? 1,
      },
    },
    defaultLimits: { rpm: env.DEFAULT_RPM ?? null, tpm: env.DEFAULT_TPM ?? null },
    validateResponses: env.VALIDATE_RESPONSES ?? env.NODE_ENV !== 'production',
    engine: env.ENGINE ?? (env.UPSTREAM_BASE_URL ? 'upstream' : 'local'),
    local: {
      modelPath: env.MODEL_PATH ?? `${PROJECT_ROOT}models/SmolLM2-135M-Instruct.Q4_1.gguf`,
      contextSize: env.CONTEXT_SIZE ?? 4096,
      threads: env.THREADS ?? availableParallelism(),
      parallel: env.PARALLEL ?? 2,
      defaultMaxTokens: env.DEFAULT_MAX_TOKENS ?? 512,
    },
    upstream: {
      baseUrl: env.UPSTREAM_BASE_URL,
      apiKey: env.UPSTREAM_API_KEY,
      model: env.UPSTREAM_MODEL ?? 'service',
      timeoutMs: env.UPSTREAM_TIMEOUT_MS ?? 60_000,
      answerTimeoutMs: env.UPSTREAM_ANSWER_TIMEOUT_MS ?? 600_000,
      concurrency: env.UPSTREAM_CONCURRENCY ?? 16,
      vision: env.UPSTREAM_VISION ?? true,
    },
    queueMaxWaiting: env.QUEUE_MAX_WAITING ?? 32,
    schemas: {
      maxBytes: env.SCHEMA_MAX_BYTES ?? DEFAULT_SCHEMA_LIMITS.maxBytes,
      maxDepth: env.SCHEMA_MAX_DEPTH ?? DEFAULT_SCHEMA_LIMITS.maxDepth,
      maxKeywords: env.SCHEMA_MAX_KEYWORDS ?? DEFAULT_SCHEMA_LIMITS.maxKeywords,
    },
    shutdownGraceMs: env.SHUTDOWN_GRACE_MS ?? 30_000,
    logLevel: env.LOG_LEVEL ?? 'info',
    metricsPort: env.METRICS_PORT,
    corsOrigins: env.CORS_ORIGINS,
    docsFile: `${PROJECT_ROOT}.cache/docs/index.html`,
    attachments: {
      imageMaxPixels: env.IMAGE_MAX_PIXELS ?? 40_000_000,
      inlineMaxBytes: env.INLINE_FILE_LIMIT_BYTES ?? 20_000_000,
      urlMaxBytes: env.URL_FILE_LIMIT_BYTES ?? 80_000_000,
      fetchTimeoutMs: env.FETCH_TIMEOUT_MS ?? 15_000,
      fetchAllowLoopback: env.FETCH_ALLOW_LOOPBACK ?? false,
    },
    tasks: {
      timeoutMs: env.TASK_TIMEOUT_MS ?? 120_000,
      memoryMb: env.TASK_MEMORY_MB ?? 1024,
      queueMax: env.TASK_QUEUE_MAX ?? 32,
      queuePerCaller: env.TASK_QUEUE_PER_CALLER ?? 4,
      pdfMaxPages: env.PDF_MAX_PAGES ?? 20,
      pdfMaxInflatedBytes: env.PDF_MAX_INFLATED_BYTES ?? 256 * 1024 * 1024,
      audioMaxSeconds: env.AUDIO_MAX_SECONDS ?? 900,
      videoMaxSeconds: env.VIDEO_MAX_SECONDS ?? 900,
      videoMaxFrames: env.VIDEO_MAX_FRAMES ?? 8,
      documentMaxInflatedBytes: env.DOCUMENT_MAX_INFLATED_BYTES ?? 100 * 1024 * 1024,
      documentMaxImages: env.DOCUMENT_MAX_IMAGES ?? 16,
    },
    scraper: {
      maxHtmlBytes: env.SCRAPER_MAX_HTML_BYTES ?? 5_000_000,
      maxLinks: env.SCRAPER_MAX_LINKS ?? 1000,
      maxTables: env.SCRAPER_MAX_TABLES ?? 100,
      maxTableCells: env.SCRAPER_MAX_TABLE_CELLS ?? 10_000,
      maxMetadata: env.SCRAPER_MAX_METADATA ?? 200,
      maxTextChars: env.SCRAPER_MAX_TEXT_CHARS ?? 100_000,
    },
    sttPython: env.STT_PYTHON ?? `${PROJECT_ROOT}.venv-stt/bin/python`,
    guard: {
      python: env.GUARD_PYTHON ?? `${PROJECT_ROOT}.venv-guard/bin/python`,
      headsPath: env.GUARD_HEADS ?? `${PROJECT_ROOT}.cache/guard/heads.json`,
    },
    search: { searxngUrl: env.SEARXNG_URL, braveApiKey: env.BRAVE_SEARCH_API_KEY, timeoutMs: env.SEARCH_TIMEOUT_MS ?? 10_000 },
  };
}
