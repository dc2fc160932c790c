import { invalidRequest } from '../../errors/service-error.ts';
import type { Task } from '../task.ts';
import type { Apertium } from './apertium.ts';
import type { LanguageDetector } from './language-detector.ts';

/** Language names a caller may write instead of ISO 639-1 codes. */
const NAMES: Record<string, string> = {
  english: 'en', spanish: 'es', catalan: 'ca', french: 'fr', galician: 'gl', portuguese: 'pt', esperanto: 'eo',
  basque: 'eu', icelandic: 'is', macedonian: 'mk', 'serbo-croatian': 'sh', italian: 'it', occitan: 'oc',
};
const code = (word: string) => NAMES[word.toLowerCase()] ?? (/^[a-z]{2}$/i.test(word) ? word.toLowerCase() : undefined);

/** Languages named in the system text: "from French", "to Spanish", "target: es". */
export function readDirections(instructions: string): { source?: string; target?: string } {
  const source = code(/\bfrom\s+([A-Za-z-]+)/i.exec(instructions)?.[1] ?? '');
  const target = code(/\b(?:to|into|target(?:_language)?\s*[:=])\s*([A-Za-z-]+)/i.exec(instructions)?.[1] ?? '');
  return { ...(source ? { source } : {}), ...(target ? { target } : {}) };
}

/**
 * Translates the last user message. The target comes from the system message ("to Spanish",
 * "target: es"); the source from it too ("from French") or else is detected. Without a target,
 * text not in English goes to English.
 */
export function createTranslateTask(apertium: Apertium, languages: Pick<LanguageDetector, 'detect'>): Task {
  return {
    name: 'translate',
    async run(input) {
      const text = input.text;
      if (!text) throw invalidRequest('The translate task needs text in the user message.', 'invalid_request', 'messages');
      const said = readDirections(input.instructions);
      const source = said.source ?? await languages.detect(text, input.caller);
      const target = said.target ?? (source === 'en' ? undefined : 'en');
      if (!target) throw invalidRequest('Say the target language in the system message, e.g. "<task>translate</task> to Spanish".', 'invalid_request', 'messages');
      if (!source) throw invalidRequest('The source language could not be detected; say it, e.g. "from French".', 'invalid_request', 'messages');
      const route = source === target ? { modes: [] } : await apertium.route(source, target);
      if (!route) {
        const pairs = [...(await apertium.supportedPairs()).keys()].join(', ');
        throw invalidRequest(`No translation from ${source} to ${target} on this deployment. Pairs: ${pairs}.`, 'unsupported_language_pair', 'messages');
      }
      const translated = route.modes.length ? await apertium.translate(text, route, input.caller) : text;
      return {
        name: 'translate',
        result: { source_language: source, target_language: target, text, translated_text: translated, engine: `apertium ${route.modes.join(' + ') || '(same language)'}` },
      };
    },
  };
}
