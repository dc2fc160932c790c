import type { Message } from '../api/types.ts';
import { flattenContent } from './normalize-request.ts';

export interface Directives {
  /** The system text with the directive tags taken out. */
  instructions: string;
  /** `<task>NAME</task>`: the first one in the system messages wins. */
  task?: string;
  /** `<guard>CODES</guard>`: the listed safety codes, upper-cased. */
  guard?: string[];
}

const TASK = /<task>\s*([^<]*?)\s*<\/task>/i;
const GUARD = /<guard>\s*([^<]*?)\s*<\/guard>/i;

/** Reads the directives from the system (or developer) messages, in order. */
export function readDirectives(messages: Message[]): Directives {
  const system = messages
    .filter((m) => m.role === 'system' || m.role === 'developer')
    .map((m) => flattenContent(m.content))
    .join('\n');
  const task = TASK.exec(system)?.[1];
  const guard = GUARD.exec(system)?.[1];
  return {
    instructions: system.replace(new RegExp(TASK.source, 'gi'), '').replace(new RegExp(GUARD.source, 'gi'), '').trim(),
    ...(task !== undefined ? { task: task.toLowerCase() } : {}),
    ...(guard !== undefined ? { guard: guard.split(',').map((c) => c.trim().toUpperCase()).filter(Boolean) } : {}),
  };
}
