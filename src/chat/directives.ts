import type { Message } from '../contract/wire-types.ts';
import { type GuardCode, parseGuardCodes } from '../guard/codes.ts';
import { flattenContent } from './normalize-request.ts';

export interface Directives {
  /** The system text with the directive tags taken out. */
  instructions: string;
  /** `<task>NAME</task>`: the first one in the system messages wins. */
  task?: string;
  /** `<guard>CODES</guard>`: the listed safety codes (`ALL` expanded); an unknown one is a 400. */
  guard?: GuardCode[];
}

/** Reads the directives from the system (or developer) messages, in order. */
export function readDirectives(messages: Message[]): Directives {
  const system = messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => flattenContent(m.content))
    .join('\n');
  const tasks = takeTags(system, 'task');
  const guards = takeTags(tasks.rest, 'guard');
  const task = tasks.values[0];
  const guard = guards.values[0];
  return {
    instructions: guards.rest.trim(),
    ...(task !== undefined ? { task: task.toLowerCase() } : {}),
    ...(guard !== undefined ? { guard: parseGuardCodes(guard.split(',')) } : {}),
  };
}

/** A system message's text without its `<task>` and `<guard>` tags: the model never reads them. */
export function withoutDirectives(text: string): string {
  return takeTags(takeTags(text, 'task').rest, 'guard').rest.trim();
}

/**
 * Every `<name>value</name>` in `text` (tag names case-insensitive, values without `<`, trimmed),
 * and the text with those tags taken out. Scans with indexOf, never backtracking, so caller text
 * costs time linear in its length (a regular expression here once took seconds on 1 KB of spaces).
 */
export function takeTags(text: string, name: string): { values: string[]; rest: string } {
  // Most system text holds no tag at all: no '<', nothing to lower-case or scan (this ran four
  // times per request, one callback per capital letter).
  if (!text.includes('<')) return { values: [], rest: text };
  const lower = text.replace(/[A-Z]/g, (c) => c.toLowerCase()); // ASCII only: indexes stay those of `text`
  const open = `<${name}>`;
  const close = `</${name}>`;
  const values: string[] = [];
  let rest = '';
  let copied = 0;
  for (let at = lower.indexOf(open); at >= 0; ) {
    const start = at + open.length;
    const nextTag = lower.indexOf('<', start); // a value holds no '<': the next one must close it
    if (nextTag < 0) break;
    if (!lower.startsWith(close, nextTag)) {
      at = lower.indexOf(open, nextTag);
      continue;
    }
    values.push(text.slice(start, nextTag).trim());
    rest += text.slice(copied, at);
    copied = nextTag + close.length;
    at = lower.indexOf(open, copied);
  }
  return { values, rest: rest + text.slice(copied) };
}
