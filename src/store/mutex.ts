// Serializes async critical sections within one process. The file lock alone would do, but
// waiters on it poll with sleeps; queueing here first means one store's callers wait in order,
// without polling, and only one of them at a time contends for the file.

export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(section: () => Promise<T>): Promise<T> {
    const result = this.tail.then(section);
    // The next section waits for this one to settle, whether it succeeded or not.
    this.tail = result.catch(() => undefined);
    return result;
  }
}
