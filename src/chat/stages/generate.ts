import type { Engine } from '../../engines/engine.ts';
import type { Stage } from '../pipeline.ts';

/** The model answers: the engine's event stream, as it comes. */
export function generate(engine: Engine): Stage {
  return async function generate(ctx) {
    return { events: engine.generate({ ...ctx.generation, signal: ctx.signal }), precontext: [] };
  };
}
