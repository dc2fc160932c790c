import type { Engine } from '../engines/engine.ts';
import type { AttachmentLimits } from '../inputs/attachments.ts';
import type { TaskRegistry } from '../tasks/registry.ts';
import { type Next, pipeline } from './pipeline.ts';
import { generate } from './stages/generate.ts';
import { moaRouter } from './stages/moa-router.ts';
import { taskMode } from './stages/task-mode.ts';

export interface PipelineDeps {
  engine: Engine;
  tasks: TaskRegistry;
  attachmentLimits: AttachmentLimits;
}

/** How a chat completion is made, stage by stage. */
export function createCompletionPipeline(deps: PipelineDeps): Next {
  return pipeline([
    taskMode(deps), // <task>NAME</task>: the task answers, no model
    moaRouter(deps), // attachments through the internal tasks: precontext, and context for the model
    generate(deps.engine), // the model answers
  ]);
}
