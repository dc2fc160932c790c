// make mock: the Prism mock of openapi.yaml, behind the front that streams (mock-front.ts).
//   node --import tsx src/mock/serve-mock.ts [--port 4010] [--host 127.0.0.1]
// Prism listens on the next port, on loopback only; callers use the front's port.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { loadContract, mockCopy } from '../contract/openapi-document.ts';
import { createMockFront } from './mock-front.ts';

const { values } = parseArgs({ options: { port: { type: 'string', default: '4010' }, host: { type: 'string', default: '127.0.0.1' } } });
const port = Number(values.port);
const prismPort = port + 1;
const contract = '.cache/openapi.mock.yaml';
mkdirSync('.cache', { recursive: true });
writeFileSync(contract, stringify(mockCopy(loadContract(), `http://${values.host}:${port}`)));

const prism = spawn('npx', ['prism', 'mock', contract, '--host', '127.0.0.1', '--port', String(prismPort)], { stdio: ['ignore', 'inherit', 'inherit'] });
prism.on('exit', (code) => {
  console.error(`Prism exited (${code}); the mock stops too`);
  process.exit(1);
});
const stop = () => {
  prism.removeAllListeners('exit');
  prism.kill();
  process.exit(0);
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);

const prismOrigin = `http://127.0.0.1:${prismPort}`;
for (;;) {
  const up = await fetch(`${prismOrigin}/v1/models`).then(() => true, () => false);
  if (up) break;
  await new Promise((r) => setTimeout(r, 250));
}
createMockFront(prismOrigin, '.cache/docs/index.html').listen(port, values.host, () => console.log(`Mock on http://${values.host}:${port}/v1 (Prism on ${prismOrigin})`));
