// The server under the hostile bench (bench/hostile.bench.ts), started by bench/lib/child-server.ts:
// the real app and the real built-in tasks, read from the environment as the service reads them, in
// front of the scripted engine, so what is measured is the tasks' cost to the event loop, not a model's.
import { loadConfig } from '../../src/config.ts';
import { createScriptedEngine, echoScript } from '../../src/engines/scripted-engine.ts';
import { attachmentLimitsOf, createTasks } from '../../src/wiring/create-tasks.ts';
import { startTestServer } from '../../src/testing/test-server.ts';

const config = loadConfig(process.env);
const engine = createScriptedEngine(echoScript);
const tasks = await createTasks(config, engine);
await startTestServer({ engine, tasks, attachmentLimits: attachmentLimitsOf(config), bodyLimitBytes: config.bodyLimitBytes }, config.port);
