// The office document reader's worker process (see DocumentReader).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { readOfficeDocument } from './office-document.ts';

serveJobs({ readOfficeDocument });
