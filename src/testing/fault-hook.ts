// The service with a fault to inject, for src/process/faults.test.ts: on SIGUSR2 it throws an
// exception nothing catches, as the work of request `fault-hook` (`FAULT=rejection`: a promise
// nothing handles), so the test watches the process-level fault policy in the real process. One
// entry importing both (not `--import`), so that both share one instance of request-scope.ts.
import { runAsRequest } from '../request-scope.ts';
import '../main.ts';

process.on('SIGUSR2', () => {
  runAsRequest({ requestId: 'fault-hook', zdr: false }, () => setImmediate(() => {
    if (process.env.FAULT === 'rejection') void Promise.reject(new Error('injected rejection'));
    else throw new Error('injected fault');
  }));
});
