// The language detector's worker process (see LanguageDetector): eld's tables load once, here.
import { eld } from 'eld/large';
import { serveJobs } from '../../workers/serve-jobs.ts';

/** ISO 639-1 code of the text's language; empty when eld cannot tell. */
export async function detectLanguage(text: string): Promise<string> {
  return eld.detect(text).language;
}

serveJobs({ detectLanguage });
