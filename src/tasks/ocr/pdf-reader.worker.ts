// The PDF reader's worker process (see PdfReader).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { readTextLayer } from './pdf-text-layer.ts';

serveJobs({ readTextLayer });
