import assert from 'node:assert/strict';
import { it } from 'node:test';
import { TaskRegistry } from './registry.ts';

it('warms every resource that loads a model, and closes them all', async () => {
  const events: string[] = [];
  const resource = (name: string, warms: boolean) => ({
    close: async () => void events.push(`close ${name}`),
    ...(warms ? { warm: async () => void events.push(`warm ${name}`) } : {}),
  });
  const registry = new TaskRegistry([], [resource('ocr', true), resource('pdf', false), resource('speech', true)]);
  await registry.warm();
  assert.deepEqual(events, ['warm ocr', 'warm speech']);
  await registry.close();
  assert.deepEqual(events.slice(2), ['close ocr', 'close pdf', 'close speech']);
});
