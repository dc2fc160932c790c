import type { TaskInput } from '../tasks/task.ts';

/** A task's input with nothing in it but what a test gives. */
export const taskInput = (overrides: Partial<TaskInput> = {}): TaskInput => ({
  attachments: [],
  text: '',
  instructions: '',
  output: { kind: 'text' },
  signal: new AbortController().signal,
  ...overrides,
});
