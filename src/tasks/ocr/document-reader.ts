import { IsolatedWorker, type WorkerLimits } from '../../workers/isolated-worker.ts';
import type { OfficeDocument, OfficeDocumentLimits, readOfficeDocument } from './office-document.ts';

export type { OfficeDocument };
export type DocumentLimits = WorkerLimits & OfficeDocumentLimits;

/**
 * Office documents, parsed in a worker process under the task deadline and heap bound: a parser
 * fed a hostile zip or XML can only take its own process down.
 */
export class DocumentReader {
  private readonly worker: IsolatedWorker<{ readOfficeDocument: typeof readOfficeDocument }>;

  constructor(private readonly limits: DocumentLimits) {
    this.worker = new IsolatedWorker(new URL('./document-reader.worker.ts', import.meta.url), 'document reader', limits);
  }

  /** `source` names the file in errors, e.g. `messages[0].content[1]`. */
  read(document: Buffer, source: string, caller?: string): Promise<OfficeDocument> {
    const { maxInflatedBytes, maxImages, maxPixels } = this.limits;
    return this.worker.runFor(caller, 'readOfficeDocument', document, source, { maxInflatedBytes, maxImages, maxPixels });
  }

  close(): Promise<void> {
    return this.worker.close();
  }
}
