// The object detector's worker process (see CocoDetector).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { detectObjects, loadDetector } from './coco-model.ts';

serveJobs({ detect: detectObjects, warm: loadDetector });
