import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import type { TaskUnits } from './tasks/task.ts';
import { z } from 'zod';
import { DEFAULT_SCHEMA_LIMITS } from './engines/schema-budget.ts';
import type { PageLimits } from './tasks/scraper/html-page.ts';
import { PROJECT_ROOT } from './project-files.ts';

export class ConfigError extends Error {}

// Each setting as zod reads it from its environment variable. An empty value counts as unset: loadConfig drops
// empty variables before parsing, so a `.default(...)` below is the value of a variable unset or empty.
const integer = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.coerce.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
const decimal = () => z.coerce.number({ error: 'must be a number of 0 or more' }).min(0, { error: 'must be a number of 0 or more' });
const flag = () => z.enum(['true', 'false', '1', '0'], { error: 'must be true or false' }).transform((v) => v === 'true' || v === '1');
const oneOf = <T extends string>(values: readonly [T, ...T[]]) => z.enum(values, { error: `must be one of ${values.join(', ')}` });
/** An http(s) URL: a typo here would otherwise surface as a 503 on every request. */
const httpUrl = () => z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
const share = () => z.coerce.number({ error: 'must be a number from 0 to 1' }).min(0, { error: 'must be a number from 0 to 1' }).max(1, { error: 'must be a number from 0 to 1' });
const text = () => z.string();
/** A comma-separated list of origins (scheme://host[:port]) or `*`. */
const origins = () => z.string().optional().transform((raw, ctx) => {
  const listed = (raw ?? '').split(',').map((o) => o.trim()).filter(Boolean);
  for (const origin of listed) {
    if (origin !== '*' && !isOrigin(origin)) ctx.addIssue({ code: 'custom', message: 'must list origins such as https://app.example.com (or *)' });
  }
  return listed;
});
const isOrigin = (origin: string) => URL.canParse(origin) && /^https?:$/.test(new URL(origin).protocol) && new URL(origin).origin === origin;

/**
 * Every setting the service reads, by its environment variable, with its check and its default: the one place a
 * setting is written (README's configuration table lists them; config.test.ts holds the two together). A setting
 * whose default depends on another (VALIDATE_RESPONSES, ENGINE) is optional here and settled in CONFIG below.
 */
export const ENV = z.object({
  HOST: text().default('127.0.0.1'), PORT: integer(0, 65535).default(8080),
  BODY_LIMIT_BYTES: integer(1, 2 ** 31).default(20 * 1024 * 1024),
  /** A key accepted in addition to the stored ones (scripts, tests); kept in memory only. */
  SERVICE_API_KEY: text().optional(),
  KEYS_FILE: text().default(`${PROJECT_ROOT}data/keys.json`),
  /** Shared state for several instances; unset: the embedded store (keys file + memory). */
  REDIS_URL: text().optional(),
  /** `key`: each key sees only its own cached answers; `global`: all keys share them. */
  CACHE_SCOPE: oneOf(['key', 'global']).default('key'),
  CACHE_TTL_SECONDS: integer(1, 31_536_000).default(3600),
  /** Bounds of the embedded cache (least recently used out first), in entries and in bytes (key and value, UTF-8);
   * Redis bounds itself (maxmemory). An entry of more than CACHE_MAX_ENTRY_BYTES is never stored, on either backend
   * (512 MiB: Redis's largest string). */
  CACHE_MAX_ENTRIES: integer(0, 10_000_000).default(1000),
  CACHE_MAX_BYTES: integer(0, 2 ** 48).default(256 * 1024 * 1024),
  CACHE_MAX_ENTRY_BYTES: integer(1, 512 * 1024 * 1024).default(16 * 1024 * 1024),
  /** `semantic`: behind the exact cache, paraphrases of deterministic requests answered under the bound δ
   * (CACHE_MAX_ERROR); `exact` by default: the semantic layer runs an encoder worker and embeds every
   * deterministic miss. CACHE_VERIFY_SHARE: the share of would-be semantic hits generated fresh and compared. */
  CACHE_MODE: oneOf(['exact', 'semantic']).default('exact'),
  // Below 1/2: an entry never verified is estimated wrong (0 + 1) / (0 + 2) = 1/2 of the time, so a
  // bound of 1/2 or more would answer any question from any entry (verification.ts).
  CACHE_MAX_ERROR: share().lt(0.5, { error: 'must be below 0.5: at 0.5 an entry never verified meets the bound, and any question would be answered from any cached one' }).default(0.02),
  CACHE_VERIFY_SHARE: share().default(0.1),
  /** What judges a paraphrase in the semantic layer: `alignment` (the candidate filter, then the word pieces'
   * alignment) or `budget` (a logistic judge on the encoder's features and a cross-encoder, built by
   * `make semantic-judge` into CACHE_JUDGE_DIR). */
  CACHE_JUDGE: oneOf(['alignment', 'budget']).default('alignment'),
  CACHE_JUDGE_DIR: text().default(`${PROJECT_ROOT}.cache/semantic-judge`),
  /** Credits per 1,000 tokens; a request costs ceil(prompt × p + completion × c) / 1000. */
  CREDITS_PER_1K_PROMPT_TOKENS: decimal().default(1), CREDITS_PER_1K_COMPLETION_TOKENS: decimal().default(2),
  /** Credits per unit of each task's work (src/chat/prices.ts says why each unit). */
  CREDITS_PER_OCR_PAGE: decimal().default(1), CREDITS_PER_DETECTED_IMAGE: decimal().default(1),
  CREDITS_PER_AUDIO_SECOND: decimal().default(0.05), CREDITS_PER_SEARCH: decimal().default(2),
  CREDITS_PER_PAGE_FETCHED: decimal().default(1), CREDITS_PER_1K_TRANSLATED_CHARS: decimal().default(1),
  /** Per-key limits for keys without their own; unset: none. */
  DEFAULT_RPM: integer(1, 1_000_000_000).optional(), DEFAULT_TPM: integer(1, 1_000_000_000_000).optional(),
  NODE_ENV: text().optional(),
  /** Default: true unless NODE_ENV=production. */
  VALIDATE_RESPONSES: flag().optional(),
  /** Default: upstream when UPSTREAM_BASE_URL is set, else local. */
  ENGINE: oneOf(['local', 'upstream']).optional(),
  MODEL_PATH: text().default(`${PROJECT_ROOT}models/SmolLM2-135M-Instruct.Q4_1.gguf`),
  CONTEXT_SIZE: integer(256, 1_048_576).default(4096), THREADS: integer(1, 256).default(availableParallelism),
  PARALLEL: integer(1, 64).default(2),
  /** Tokens a request without `max_tokens` may generate; a caller may still ask up to the contract's 32000. */
  DEFAULT_MAX_TOKENS: integer(1, 32_000).default(512),
  UPSTREAM_BASE_URL: httpUrl().optional(), UPSTREAM_API_KEY: text().optional(), UPSTREAM_MODEL: text().default('service'),
  UPSTREAM_TIMEOUT_MS: integer(1, 3_600_000).default(60_000), UPSTREAM_ANSWER_TIMEOUT_MS: integer(1, 3_600_000).default(600_000),
  UPSTREAM_CONCURRENCY: integer(1, 1024).default(16),
  /** The upstream model reads images (`image_url` parts); false for a text-only one. */
  UPSTREAM_VISION: flag().default(true),
  /** Send vLLM's `cache_salt` per API key, so the upstream's prefix cache is shared by no two keys. */
  UPSTREAM_CACHE_SALT: flag().default(false),
  /** Requests that may wait for a generation slot before 503 `queue_full`. */
  QUEUE_MAX_WAITING: integer(0, 100_000).default(32),
  /** Bounds on a request's JSON Schemas (response_format and tools together), 400 above them. */
  SCHEMA_MAX_BYTES: integer(1, 2 ** 31).default(DEFAULT_SCHEMA_LIMITS.maxBytes),
  SCHEMA_MAX_DEPTH: integer(1, 10_000).default(DEFAULT_SCHEMA_LIMITS.maxDepth),
  SCHEMA_MAX_KEYWORDS: integer(1, 10_000_000).default(DEFAULT_SCHEMA_LIMITS.maxKeywords),
  /** On SIGTERM, how long requests in flight may take to finish before they are ended cleanly. */
  SHUTDOWN_GRACE_MS: integer(0, 3_600_000).default(30_000),
  /** The JSON log's level (pino's). */
  LOG_LEVEL: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `GET /metrics` on this port instead of the service's own (same host); unset: the service's port. */
  METRICS_PORT: integer(1, 65535).optional(),
  /** Browser origins allowed by CORS (`https://app.example.com`, or `*` for any); none: no CORS. */
  CORS_ORIGINS: origins(),
  /** Largest decoded image, in pixels (width × height), checked from its header before decoding. */
  IMAGE_MAX_PIXELS: integer(1, 2 ** 31).default(40_000_000),
  INLINE_FILE_LIMIT_BYTES: integer(1, 2 ** 31).default(20_000_000), URL_FILE_LIMIT_BYTES: integer(1, 2 ** 31).default(80_000_000),
  FETCH_TIMEOUT_MS: integer(1, 600_000).default(15_000),
  /** Tests only: lets the fetcher reach loopback addresses. */
  FETCH_ALLOW_LOOPBACK: flag().default(false),
  /** A worker (detection, PDF parsing, OCR, speech) still busy with one file after this is stopped. */
  TASK_TIMEOUT_MS: integer(1, 3_600_000).default(120_000),
  /** Heap of each task's worker process. */
  TASK_MEMORY_MB: integer(32, 65_536).default(1024),
  /** Jobs that may wait for one engine (OCR, a detector, the guard, translation…). */
  TASK_QUEUE_MAX: integer(0, 100_000).default(32),
  /** Jobs one API key may have waiting or running on one engine. */
  TASK_QUEUE_PER_CALLER: integer(1, 100_000).default(4),
  PDF_MAX_PAGES: integer(1, 100_000).default(20),
  /** Largest total of a PDF's streams once inflated. */
  PDF_MAX_INFLATED_BYTES: integer(1, 2 ** 40).default(256 * 1024 * 1024),
  /** Longest audio transcribed (the rest is not decoded); longest video read (a longer one is refused). */
  AUDIO_MAX_SECONDS: integer(1, 86_400).default(900), VIDEO_MAX_SECONDS: integer(1, 86_400).default(900),
  /** Frames sampled from a video, evenly spaced, for OCR and object detection. */
  VIDEO_MAX_FRAMES: integer(1, 64).default(8),
  /** Largest total of an office document's parts once inflated (it is a zip). */
  DOCUMENT_MAX_INFLATED_BYTES: integer(1, 2 ** 40).default(100 * 1024 * 1024),
  /** Pictures inside one office document sent to OCR; the rest are counted, not read. */
  DOCUMENT_MAX_IMAGES: integer(0, 1000).default(16),
  /** Bounds on what the scraper reads of one page (README, "Scraper"). */
  SCRAPER_MAX_HTML_BYTES: integer(1, 2 ** 31).default(5_000_000), SCRAPER_MAX_LINKS: integer(0, 10_000_000).default(1000),
  SCRAPER_MAX_TABLES: integer(0, 1_000_000).default(100), SCRAPER_MAX_TABLE_CELLS: integer(0, 100_000_000).default(10_000),
  SCRAPER_MAX_METADATA: integer(0, 1_000_000).default(200), SCRAPER_MAX_TEXT_CHARS: integer(0, 2 ** 29).default(100_000),
  /** The Pythons of the speech-to-text worker's and the text guard's environments; the guard's fitted heads
   * (written by `make setup` from the labelled training set). */
  STT_PYTHON: text().default(`${PROJECT_ROOT}.venv-stt/bin/python`),
  GUARD_PYTHON: text().default(`${PROJECT_ROOT}.venv-guard/bin/python`),
  GUARD_HEADS: text().default(`${PROJECT_ROOT}.cache/guard/heads.json`),
  /** The heads a text longer than one window is read by; beside GUARD_HEADS by default. */
  GUARD_SPANS_HEADS: text().optional(),
  /** Windows of text whose guard scores are kept per API key, so a conversation's earlier turns are not read again. */
  GUARD_SPAN_CACHE: integer(0, 10_000_000).default(20_000),
  /** A Llama Guard 3 on an OpenAI-compatible server as a text reader of the guard: `either` reader's match blocks,
   * or (`alone`) the only text reader. Each text, or each piece of GUARD_UPSTREAM_CHUNK_CHARS, is one call. */
  GUARD_UPSTREAM_BASE_URL: httpUrl().optional(), GUARD_UPSTREAM_API_KEY: text().optional(),
  GUARD_UPSTREAM_MODEL: text().default('llama-guard3'), GUARD_UPSTREAM_MODE: oneOf(['either', 'alone']).default('either'),
  GUARD_UPSTREAM_TIMEOUT_MS: integer(1, 3_600_000).default(30_000), GUARD_UPSTREAM_CHUNK_CHARS: integer(200, 10_000_000).default(4000),
  GUARD_UPSTREAM_CONCURRENCY: integer(1, 1024).default(4), GUARD_UPSTREAM_CACHE_SALT: flag().default(false),
  SEARXNG_URL: httpUrl().optional(), BRAVE_SEARCH_API_KEY: text().optional(), SEARCH_TIMEOUT_MS: integer(1, 600_000).default(10_000),
}).refine((env) => env.ENGINE !== 'upstream' || env.UPSTREAM_BASE_URL !== undefined, {
  path: ['ENGINE'], message: 'ENGINE=upstream needs UPSTREAM_BASE_URL (the upstream API base, e.g. http://host:8000/v1)',
}).refine((env) => env.GUARD_UPSTREAM_MODE !== 'alone' || env.GUARD_UPSTREAM_BASE_URL !== undefined, {
  path: ['GUARD_UPSTREAM_MODE'], message: 'GUARD_UPSTREAM_MODE=alone needs GUARD_UPSTREAM_BASE_URL (a server of a Llama Guard 3 model, e.g. http://host:11434/v1)',
});

/** The settings grouped as the service uses them; only names move here, every value and default comes from ENV. */
const CONFIG = ENV.transform((env) => ({
  host: env.HOST,
  port: env.PORT,
  bodyLimitBytes: env.BODY_LIMIT_BYTES,
  apiKey: env.SERVICE_API_KEY,
  keysFile: env.KEYS_FILE,
  redisUrl: env.REDIS_URL,
  cache: {
    scope: env.CACHE_SCOPE,
    ttlSeconds: env.CACHE_TTL_SECONDS,
    maxEntries: env.CACHE_MAX_ENTRIES,
    maxBytes: env.CACHE_MAX_BYTES,
    maxEntryBytes: env.CACHE_MAX_ENTRY_BYTES,
    mode: env.CACHE_MODE,
    maxError: env.CACHE_MAX_ERROR,
    verifyShare: env.CACHE_VERIFY_SHARE,
    judgeDir: env.CACHE_JUDGE === 'budget' ? env.CACHE_JUDGE_DIR : undefined,
  },
  credits: {
    per1kPromptTokens: env.CREDITS_PER_1K_PROMPT_TOKENS,
    per1kCompletionTokens: env.CREDITS_PER_1K_COMPLETION_TOKENS,
    perUnit: {
      ocr_pages: env.CREDITS_PER_OCR_PAGE,
      detected_images: env.CREDITS_PER_DETECTED_IMAGE,
      audio_seconds: env.CREDITS_PER_AUDIO_SECOND,
      searches: env.CREDITS_PER_SEARCH,
      pages_fetched: env.CREDITS_PER_PAGE_FETCHED,
      translated_kchars: env.CREDITS_PER_1K_TRANSLATED_CHARS,
    } satisfies Required<TaskUnits>,
  },
  defaultLimits: { rpm: env.DEFAULT_RPM ?? null, tpm: env.DEFAULT_TPM ?? null },
  validateResponses: env.VALIDATE_RESPONSES ?? env.NODE_ENV !== 'production',
  engine: env.ENGINE ?? (env.UPSTREAM_BASE_URL ? 'upstream' : 'local'),
  local: {
    modelPath: env.MODEL_PATH,
    contextSize: env.CONTEXT_SIZE,
    threads: env.THREADS,
    parallel: env.PARALLEL,
    defaultMaxTokens: env.DEFAULT_MAX_TOKENS,
  },
  upstream: {
    baseUrl: env.UPSTREAM_BASE_URL,
    apiKey: env.UPSTREAM_API_KEY,
    model: env.UPSTREAM_MODEL,
    timeoutMs: env.UPSTREAM_TIMEOUT_MS,
    answerTimeoutMs: env.UPSTREAM_ANSWER_TIMEOUT_MS,
    concurrency: env.UPSTREAM_CONCURRENCY,
    vision: env.UPSTREAM_VISION,
    cacheSalt: env.UPSTREAM_CACHE_SALT,
  },
  queueMaxWaiting: env.QUEUE_MAX_WAITING,
  schemas: { maxBytes: env.SCHEMA_MAX_BYTES, maxDepth: env.SCHEMA_MAX_DEPTH, maxKeywords: env.SCHEMA_MAX_KEYWORDS },
  shutdownGraceMs: env.SHUTDOWN_GRACE_MS,
  logLevel: env.LOG_LEVEL,
  metricsPort: env.METRICS_PORT,
  corsOrigins: env.CORS_ORIGINS,
  /** The rendered API reference served at `/docs` (built by the setup from openapi.yaml); not a setting. */
  docsFile: `${PROJECT_ROOT}.cache/docs/index.html`,
  attachments: {
    imageMaxPixels: env.IMAGE_MAX_PIXELS,
    inlineMaxBytes: env.INLINE_FILE_LIMIT_BYTES,
    urlMaxBytes: env.URL_FILE_LIMIT_BYTES,
    fetchTimeoutMs: env.FETCH_TIMEOUT_MS,
    fetchAllowLoopback: env.FETCH_ALLOW_LOOPBACK,
  },
  tasks: {
    timeoutMs: env.TASK_TIMEOUT_MS,
    memoryMb: env.TASK_MEMORY_MB,
    queueMax: env.TASK_QUEUE_MAX,
    queuePerCaller: env.TASK_QUEUE_PER_CALLER,
    pdfMaxPages: env.PDF_MAX_PAGES,
    pdfMaxInflatedBytes: env.PDF_MAX_INFLATED_BYTES,
    audioMaxSeconds: env.AUDIO_MAX_SECONDS,
    videoMaxSeconds: env.VIDEO_MAX_SECONDS,
    videoMaxFrames: env.VIDEO_MAX_FRAMES,
    documentMaxInflatedBytes: env.DOCUMENT_MAX_INFLATED_BYTES,
    documentMaxImages: env.DOCUMENT_MAX_IMAGES,
  },
  scraper: {
    maxHtmlBytes: env.SCRAPER_MAX_HTML_BYTES,
    maxLinks: env.SCRAPER_MAX_LINKS,
    maxTables: env.SCRAPER_MAX_TABLES,
    maxTableCells: env.SCRAPER_MAX_TABLE_CELLS,
    maxMetadata: env.SCRAPER_MAX_METADATA,
    maxTextChars: env.SCRAPER_MAX_TEXT_CHARS,
  } satisfies PageLimits,
  sttPython: env.STT_PYTHON,
  guard: {
    python: env.GUARD_PYTHON, headsPath: env.GUARD_HEADS, spansHeadsPath: env.GUARD_SPANS_HEADS ?? join(dirname(env.GUARD_HEADS), 'heads-spans.json'),
    spanCache: env.GUARD_SPAN_CACHE,
    upstream: env.GUARD_UPSTREAM_BASE_URL === undefined ? undefined : {
      baseUrl: env.GUARD_UPSTREAM_BASE_URL, apiKey: env.GUARD_UPSTREAM_API_KEY, model: env.GUARD_UPSTREAM_MODEL,
      mode: env.GUARD_UPSTREAM_MODE, timeoutMs: env.GUARD_UPSTREAM_TIMEOUT_MS, chunkChars: env.GUARD_UPSTREAM_CHUNK_CHARS,
      concurrency: env.GUARD_UPSTREAM_CONCURRENCY, cacheSalt: env.GUARD_UPSTREAM_CACHE_SALT,
    },
  },
  search: { searxngUrl: env.SEARXNG_URL, braveApiKey: env.BRAVE_SEARCH_API_KEY, timeoutMs: env.SEARCH_TIMEOUT_MS },
}));

/** Every setting the service reads, validated once at start: the type is what CONFIG makes of the environment. */
export type Config = z.infer<typeof CONFIG>;

/** Reads and checks every setting; the first bad one is a ConfigError naming it and its value. */
export function loadConfig(raw: NodeJS.ProcessEnv): Config {
  const parsed = CONFIG.safeParse(withoutEmpty(raw));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0]);
    if (issue.code === 'custom' && name === 'ENGINE') throw new ConfigError(issue.message);
    throw new ConfigError(`${name} ${issue.message}, got "${raw[name]}"`);
  }
  return parsed.data;
}

/** `PORT=` in a .env or a compose file means "not set", so an empty variable takes the default like a missing one. */
function withoutEmpty(raw: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(raw).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''));
}
