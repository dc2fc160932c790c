import { invalidRequest, serviceUnavailable } from '../errors/service-error.ts';
import { TASK_NAMES, type Task, type TaskName } from './task.ts';

/** Something a task holds that must be ended at shutdown (a worker process). */
export interface Closable {
  close(): Promise<void>;
}

/** The tasks this deployment runs, looked up by the name `<task>` gives. */
export class TaskRegistry {
  private readonly tasks = new Map<TaskName, Task>();

  constructor(tasks: Task[], private readonly resources: Closable[] = []) {
    for (const task of tasks) this.tasks.set(task.name, task);
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
