// The service with a fault to inject, for src/process/faults.test.ts: on SIGUSR2 it throws an
// exception nothing catches (`FAULT=rejection`: a promise nothing handles), so the test watches
// the process-level fault policy in the real process, with a request in flight.
import '../main.ts';

process.on('SIGUSR2', () => setImmediate(() => {
  if (process.env.FAULT === 'rejection') void Promise.reject(new Error('injected rejection'));
  else throw new Error('injected fault');
}));
