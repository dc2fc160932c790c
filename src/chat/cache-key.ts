import { createHash } from 'node:crypto';
import type { RequestContext } from './request-context.ts';
import type { ContentPart, Message } from '../contract/wire-types.ts';
import type { ResolvedAttachment } from '../inputs/attachments.ts';
import { stableJson } from './stable-json.ts';

// The semantic cache's answers are compared in the same canonical form.
export { stableJson };

export type CacheScope = 'key' | 'global';

/**
 * The verified cache's key: a SHA-256 over the canonical form of everything that shapes the answer
 * — the messages (attachments by the SHA-256 of their bytes, so the same file by data URL or by
 * URL is the same), response format, tools and tool choice, sampling (temperature, top_p, seed,
 * stop), max tokens, reasoning effort, and whether the MoA layer runs. The directives are in the
 * system messages. Scoped to the caller's key unless the scope is global.
 */
export async function cacheKeyOf(ctx: RequestContext, scope: CacheScope): Promise<string> {
  return sha256(stableJson(await canonicalRequest(ctx, scope)));
}

/** The semantic cache's compared scope, and the one text whose meaning may vary within it. */
export interface SemanticKey {
  key: string;
  /** The last message's text (its text parts, joined by new lines). */
  text: string;
}

/**
 * The semantic cache's key: the same canonical request as `cacheKeyOf`, with only the text of
 * the last message left out — so two requests share it when everything else that shapes the
 * answer is equal (scope, model settings, response format and schema, tools, attachments by
 * bytes, directives, earlier turns). Undefined when the last message is not the user's or has no
 * text: then there is no "meaning of the question" to compare.
 */
export async function semanticKeyOf(ctx: RequestContext, scope: CacheScope): Promise<SemanticKey | undefined> {
  const canonical = await canonicalRequest(ctx, scope);
  const last = ctx.body.messages.at(-1);
  if (last?.role !== 'user') return undefined;
  const text = typeof last.content === 'string'
    ? last.content
    : (last.content ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n');
  if (text.trim() === '') return undefined;
  const messages = canonical.messages.slice(0, -1);
  const lastCanonical = canonical.messages.at(-1) as { content: unknown };
  // The model name is kept too (the exact key leaves it out: one engine answers every name), so a
  // deployment that routes names to models never mixes them. The last turn keeps its shape and its attachments; only its text parts become placeholders.
  const content = Array.isArray(lastCanonical.content)
    ? lastCanonical.content.map((part: { type: string }) => (part.type === 'text' ? { type: 'text' } : part))
    : { type: 'text' };
  const key = sha256(stableJson({ ...canonical, semantic: 1, model: ctx.body.model, messages: [...messages, { ...lastCanonical, content }] }));
  return { key, text };
}

async function canonicalRequest(ctx: RequestContext, scope: CacheScope) {
  const { body, generation } = ctx;
  const digests = sentDigests(await ctx.attachments());
  const messages = body.messages.map((m, i) => canonicalMessage(m, i, digests));
  return {
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

/** The hex SHA-256 of a text's UTF-8 bytes (hashed from the string: no copy of it as a Buffer first). */
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
