// The image guard's worker process (see ImageClassifier).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { loadModel, scoreImage } from './image-model.ts';

serveJobs({ score: scoreImage, warm: loadModel });
