import { invalidRequest, serviceUnavailable } from '../errors/service-error.ts';
import { TASK_NAMES, type Task, type TaskName } from './task.ts';

/** Something a task holds (a worker process): ended at shutdown, and warmed at start where it loads a model. */
export interface TaskResource {
  close(): Promise<void>;
  warm?(): Promise<void>;
}

/** The tasks this deployment runs, looked up by the name `<task>` gives. */
export class TaskRegistry {
  private readonly tasks = new Map<TaskName, Task>();

  constructor(tasks: Task[], private readonly resources: TaskResource[] = []) {
    for (const task of tasks) this.tasks.set(task.name, task);
  }

  /** Starts the workers that load a model (OCR, detection, speech), so that no first request waits for one. */
  async warm(): Promise<void> {
    await Promise.all(this.resources.map((r) => r.warm?.()));
  }

  /** Ends every worker the tasks hold. */
  async close(): Promise<void> {
    await Promise.allSettled(this.resources.map((r) => r.close()));
  }

  /** 400 for a name the contract does not know; 503 for one this deployment cannot run. */
  get(name: string): Task {
    if (!(TASK_NAMES as readonly string[]).includes(name)) {
      throw invalidRequest(`Unknown task "${name}". Valid tasks: ${TASK_NAMES.join(', ')}.`, 'unknown_task', 'messages');
    }
    const task = this.tasks.get(name as TaskName);
    if (!task) throw serviceUnavailable(`The task "${name}" is not available on this deployment.`, 'task_unavailable', 60);
    return task;
  }

  has(name: TaskName): boolean {
    return this.tasks.has(name);
  }
}
