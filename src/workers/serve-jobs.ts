import { ServiceError } from '../errors/service-error.ts';
import type { JobReply, JobRequest } from './worker-protocol.ts';

/** Inside a worker process: answers an IsolatedWorker's requests with the named jobs. */
export function serveJobs(jobs: Record<string, (...args: never[]) => Promise<unknown>>): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('serveJobs runs in a process forked by IsolatedWorker');
  process.on('disconnect', () => process.exit(0)); // the server went away: so does its worker
  process.on('message', async ({ id, job, args }: JobRequest) => {
    let reply: JobReply;
    try {
      const run = jobs[job];
      if (!run) throw new Error(`no job "${job}"`);
      reply = { id, result: await run(...(args as never[])) };
    } catch (err) {
      reply = { id, failure: err instanceof ServiceError
        ? { message: err.message, status: err.status, type: err.type, code: err.code, param: err.param }
        : { message: err instanceof Error ? err.message : String(err) } };
    }
    send(reply);
  });
}
