import type { Engine, GenerationEvent } from '../engines/engine.ts';

/** Wraps an engine to count the events it yields, so a test can see generation stop or go on. */
export function countingEngine(engine: Engine, counts: (event: GenerationEvent) => boolean = () => true) {
  let produced = 0;
  const counting: Engine = {
    description: `counting ${engine.description}`,
    async *generate(request) {
      for await (const event of engine.generate(request)) {
        if (counts(event)) produced++;
        yield event;
      }
    },
  };
  return { engine: counting, produced: () => produced, reset: () => void (produced = 0) };
}
