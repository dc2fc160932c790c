import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';

const require = createRequire(import.meta.url);

export interface DetectedObject {
  label: string;
  score: number;
  bbox: { x: number; y: number; width: number; height: number };
}

/** CenterNet reads 512×512: a larger picture only costs memory, so it is shrunk to this first. */
const MAX_SIDE = 1024;

/** Candidates below this are mostly wrong on the sample photos; above it the label is usually right. */
const MIN_SCORE = 0.3;

// The parts of @vladmandic/human this detector uses (its bundled typings do not resolve under NodeNext).
interface Tensor { dispose?(): void }
interface HumanLike {
  tf: {
    tensor4d(data: Uint8Array, shape: number[], dtype: string): Tensor;
    dispose(t: Tensor): void;
    ready(): Promise<void>;
    io: {
      registerLoadRouter(router: (url: unknown) => unknown): void;
      getModelArtifactsForJSON(json: unknown, load: (manifest: { paths: string[]; weights: unknown[] }[]) => Promise<[unknown[], ArrayBuffer]>): Promise<unknown>;
    };
  };
  load(): Promise<void>;
  detect(input: Tensor): Promise<{ object: { label: string; score: number; box: [number, number, number, number] }[] }>;
}

// This module runs in the detector's own worker process: the model it loads is that worker's state.
let human: Promise<HumanLike> | undefined;

/**
 * COCO objects in an image, by the CenterNet model that @vladmandic/human ships, on TensorFlow.js's
 * WebAssembly backend; everything is read from node_modules, nothing is fetched. Runs inside the
 * detector's worker process, where the model is loaded once.
 */
export async function detectObjects(image: Uint8Array): Promise<{ width: number; height: number; objects: DetectedObject[] }> {
  const model = await (human ??= load());
  const { width = 0, height = 0 } = await sharp(image).metadata();
  const scale = Math.min(1, MAX_SIDE / Math.max(width, height, 1));
  const { data, info } = await sharp(image).removeAlpha().toColourspace('srgb')
    .resize({ width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)), fit: 'fill' })
    .raw().toBuffer({ resolveWithObject: true });
  const input = model.tf.tensor4d(new Uint8Array(data.buffer, data.byteOffset, data.length), [1, info.height, info.width, 3], 'int32');
  try {
    const result = await model.detect(input);
    const objects = result.object.filter((o) => o.score >= MIN_SCORE).map((o) => ({
      label: o.label,
      score: Math.min(1, Math.max(0, o.score)),
      bbox: clip(o.box.map((v) => v / scale) as [number, number, number, number], width, height),
    }));
    return { width, height, objects };
  } finally {
    model.tf.dispose(input);
  }
}

/** Loads the model now (the worker's first detection would otherwise). */
export async function loadDetector(): Promise<void> {
  await (human ??= load());
}

/** The model's box, cut to the image (its boxes can overhang the edges). */
function clip([x, y, w, h]: [number, number, number, number], width: number, height: number) {
  const left = Math.min(Math.max(0, x), width);
  const top = Math.min(Math.max(0, y), height);
  return { x: left, y: top, width: Math.max(0, Math.min(x + w, width) - left), height: Math.max(0, Math.min(y + h, height) - top) };
}

async function load(): Promise<HumanLike> {
  // The package's "exports" map is malformed for subpaths, so its files are reached from the main entry.
  const dist = dirname(require.resolve('@vladmandic/human'));
  const { Human } = require(join(dist, 'human.node-wasm.js')) as { Human: new (config: object) => HumanLike };
  const human = new Human({
    backend: 'wasm',
    wasmPath: `${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`,
    wasmPlatformFetch: false,
    modelBasePath: `file://${join(dirname(dist), 'models')}/`,
    cacheModels: false,
    debug: false,
    warmup: 'none',
    filter: { enabled: false },
    face: { enabled: false }, body: { enabled: false }, hand: { enabled: false }, gesture: { enabled: false }, segmentation: { enabled: false },
    object: { enabled: true, modelPath: 'centernet.json', minConfidence: 0.2, iouThreshold: 0.4, maxDetected: 20, skipFrames: 0, skipTime: 0 },
  });
  // TensorFlow.js in Node without tfjs-node cannot load file:// URLs: read the model from disk.
  human.tf.io.registerLoadRouter((url) => {
    if (typeof url !== 'string' || !url.startsWith('file://')) return null;
    const jsonPath = fileURLToPath(url);
    return {
      load: () => human.tf.io.getModelArtifactsForJSON(JSON.parse(readFileSync(jsonPath, 'utf8')), async (manifest) => {
        const specs = manifest.flatMap((group) => group.weights);
        const bytes = Buffer.concat(manifest.flatMap((group) => group.paths.map((p) => readFileSync(join(dirname(jsonPath), p)))));
        return [specs, bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer];
      }),
    };
  });
  await human.load();
  await human.tf.ready();
  return human;
}
