import { createHash } from 'node:crypto';
import type { RequestContext } from './request-context.ts';
import type { ContentPart, Message } from '../contract/wire-types.ts';
import type { ResolvedAttachment } from '../inputs/attachments.ts';

export type CacheScope = 'key' | 'global';

/**
 * The verified cache's key: a SHA-256 over the canonical form of everything that shapes the answer
 * — the messages (attachments by the SHA-256 of their bytes, so the same file by data URL or by
 * URL is the same), response format, tools and tool choice, sampling (temperature, top_p, seed,
 * stop), max tokens, reasoning effort, and whether the MoA layer runs. The directives are in the
 * system messages. Scoped to the caller's key unless the scope is global.
 */
export async function cacheKeyOf(ctx: RequestContext, scope: CacheScope): Promise<string> {
  const { body, generation } = ctx;
  const digests = sentDigests(await ctx.attachments());
  const messages = body.messages.map((m, i) => canonicalMessage(m, i, digests));
  const canonical = {
    v: 2, // 2: attachments by what was sent (1 keyed a video by one of its frames or its sound track)
    scope: scope === 'key' ? ctx.caller.keyId : 'global',
    moa: !ctx.flags.bypassMoa,
    messages,
    response_format: body.response_format ?? null,
    tools: body.tools ?? null,
    tool_choice: body.tool_choice ?? null,
    parallel_tool_calls: generation.parallelToolCalls,
    temperature: generation.temperature,
    top_p: generation.topP,
    seed: generation.seed ?? null,
    stop: generation.stop,
    max_tokens: generation.maxTokens ?? null,
    reasoning_effort: generation.reasoningEffort ?? null,
  };
  return sha256(Buffer.from(stableJson(canonical)));
}

/**
 * Each content part's digests of what was sent, in order. One part may be read as several
 * attachments (a video: frames and sound track); all are counted, none stands for the others.
 */
function sentDigests(attachments: ResolvedAttachment[]): Map<string, string[]> {
  const digests = new Map<string, string[]>();
  for (const { param, sent } of attachments) {
    const seen = digests.get(param) ?? [];
    if (seen.at(-1) !== sent) seen.push(sent);
    digests.set(param, seen);
  }
  return digests;
}

function canonicalMessage(message: Message, i: number, digests: Map<string, string[]>): unknown {
  const content = Array.isArray(message.content)
    ? message.content.map((part, j) => canonicalPart(part, digests.get(`messages[${i}].content[${j}]`)))
    : message.content;
  return { ...message, content };
}

function canonicalPart(part: ContentPart, digests: string[] | undefined): unknown {
  if (part.type === 'text') return part;
  return { type: part.type, sha256: digests ?? [], ...(part.type === 'file' ? { filename: part.file.filename } : {}) };
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** JSON with object keys sorted at every depth, so equal requests give equal text. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v);
}
