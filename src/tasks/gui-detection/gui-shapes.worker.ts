// The GUI detector's worker process (see GuiDetector).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { findShapes } from './gui-shapes.ts';

serveJobs({ findShapes });
