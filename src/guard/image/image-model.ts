import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import { loadGraphModel, type GraphModel } from '@tensorflow/tfjs-converter';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import sharp, { type Sharp } from 'sharp';

const require = createRequire(import.meta.url);

/** The classes of nsfwjs's models, in the order of their output. */
export const NSFW_CLASSES = ['Drawing', 'Hentai', 'Neutral', 'Porn', 'Sexy'] as const;
export type NsfwClass = (typeof NSFW_CLASSES)[number];

/** A region of the picture in its own pixels (a person or an animal the object detector found). */
export interface Region {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** What the image guard reads of one picture. */
export interface ImageScores {
  /** nsfwjs's class probabilities (they sum to 1). */
  nsfw: Record<NsfwClass, number>;
  /** The largest share of blood-coloured pixels inside one of the regions given (0 for none). */
  bloodOnBeing: number;
}

/** nsfwjs's MobileNetV2 "mid" model reads 224×224 RGB in [0, 1]. */
const SIZE = 224;

// This module runs in the image guard's own worker process: the model it loads is that worker's state.
let model: Promise<GraphModel> | undefined;

/** The blood measure reads the picture at most this wide or high. */
const BLOOD_SIDE = 320;

/** Scores one picture: nudity classes by nsfwjs's model, and blood on the beings in `regions`. */
export async function scoreImage(image: Uint8Array, regions: Region[]): Promise<ImageScores> {
  const loaded = await (model ??= load());
  const rgb = sharp(image).removeAlpha().toColourspace('srgb');
  const { data } = await rgb.clone().resize(SIZE, SIZE, { fit: 'fill' }).raw().toBuffer({ resolveWithObject: true });
  const probabilities = tf.tidy(() => {
    const input = tf.tensor4d(Float32Array.from(data, (v) => v / 255), [1, SIZE, SIZE, 3]);
    return loaded.predict(input) as tf.Tensor;
  });
  try {
    const values = await probabilities.data();
    const nsfw = Object.fromEntries(NSFW_CLASSES.map((name, i) => [name, values[i]!])) as Record<NsfwClass, number>;
    return { nsfw, bloodOnBeing: regions.length === 0 ? 0 : await bloodOnRegions(rgb, regions) };
  } finally {
    probabilities.dispose();
  }
}

/** The largest blood-coloured share inside one region, read from a small copy of the picture. */
async function bloodOnRegions(rgb: Sharp, regions: Region[]): Promise<number> {
  const { data, info } = await rgb.resize(BLOOD_SIDE, BLOOD_SIDE, { fit: 'inside' }).raw().toBuffer({ resolveWithObject: true });
  const { width: originalWidth = info.width } = await rgb.metadata();
  const scale = info.width / originalWidth;
  return Math.max(...regions.map((region) => bloodShare(data, info.width, info.height, region, scale)));
}

/**
 * The share of a region's pixels whose colour is that of blood: a deep, saturated red, darker
 * than a painted red. No packaged gore classifier exists (see README, Guardrails): this colour
 * measure on a person or animal is what S1_IMAGE reads, and it is measured as such.
 */
export function bloodShare(rgb: Uint8Array, width: number, height: number, region: Region, scale: number): number {
  const left = Math.max(0, Math.floor(region.x * scale)), right = Math.min(width, Math.ceil((region.x + region.width) * scale));
  const top = Math.max(0, Math.floor(region.y * scale)), bottom = Math.min(height, Math.ceil((region.y + region.height) * scale));
  let count = 0;
  for (let y = top; y < bottom; y++) {
    for (let x = left; x < right; x++) {
      const i = (y * width + x) * 3;
      const r = rgb[i]!, g = rgb[i + 1]!, b = rgb[i + 2]!;
      const max = Math.max(r, g, b), min = Math.min(r, g, b);
      if (max !== r || max < 50 || max > 200) continue; // red-led, neither black nor bright
      const hue = (60 * (g - b)) / (max - min || 1); // degrees either side of pure red
      if ((max - min) / max >= 0.6 && hue > -15 && hue < 12) count++;
    }
  }
  const area = (right - left) * (bottom - top);
  return area <= 0 ? 0 : count / area;
}

/** Loads the model now (the worker's first job would otherwise). */
export async function loadModel(): Promise<void> {
  await (model ??= load());
}

/** The model and its weights are read from the nsfwjs package in node_modules; nothing is fetched. */
async function load(): Promise<GraphModel> {
  setWasmPaths(`${dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json'))}/dist/`);
  await tf.setBackend('wasm');
  await tf.ready();
  // The package's "exports" map hides its files: they are reached from its main entry (dist/cjs/index.js).
  const dir = join(dirname(dirname(require.resolve('nsfwjs'))), 'models', 'mobilenet_v2_mid');
  // The package ships the model as UMD modules: the topology as an object, each shard as base64.
  const json = require(join(dir, 'model.min.js')) as { modelTopology: object; format: string; weightsManifest: { paths: string[]; weights: tf.io.WeightsManifestEntry[] }[] };
  const manifest = json.weightsManifest;
  const weights = Buffer.concat(manifest.flatMap((group) => group.paths.map((p) => Buffer.from(require(join(dir, `${p}.min.js`)) as string, 'base64'))));
  return loadGraphModel(tf.io.fromMemory({
    modelTopology: json.modelTopology,
    format: json.format,
    weightSpecs: manifest.flatMap((group) => group.weights),
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.length) as ArrayBuffer,
  }));
}
