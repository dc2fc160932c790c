// The OCR worker process (see TesseractReader).
import { serveJobs } from '../../workers/serve-jobs.ts';
import { recognizeImage, warmTesseract } from './tesseract-engine.ts';

serveJobs({ recognizeImage, warmTesseract });
