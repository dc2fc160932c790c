// How src/guard/image/fixtures/classifier-says-nsfw.png was made (run once, by hand; it is kept in git):
// a photo of a coffee cup from python3-skimage, nudged a few levels per pixel by gradient ascent
// until nsfwjs's model calls it "Porn". No sexual image exists in any registry package, and none
// belongs in this repository: this is an adversarial example, a picture any person calls harmless
// that the classifier does not. It tests that the classifier's verdict blocks a request, not the
// classifier's quality (see README, Guardrails, for that).
//   node --import tsx scripts/make-nsfw-fixture.ts .cache/fixtures/photos/coffee.png src/guard/image/fixtures/classifier-says-nsfw.png
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs'; // the full package (nsfwjs's peer) has the gradients and the CPU backend
import { loadGraphModel } from '@tensorflow/tfjs-converter';
import sharp from 'sharp';

const require = createRequire(import.meta.url);
const [photo, out] = process.argv.slice(2);
if (!photo || !out) throw new Error('usage: make-nsfw-fixture.ts PHOTO OUT.png');
await tf.setBackend('cpu');
const dir = join(dirname(dirname(require.resolve('nsfwjs'))), 'models', 'mobilenet_v2_mid');
const json = require(join(dir, 'model.min.js'));
const groups = json.weightsManifest as { paths: string[]; weights: tf.io.WeightsManifestEntry[] }[];
const weights = Buffer.concat(groups.flatMap((g) => g.paths.map((p) => Buffer.from(require(join(dir, `${p}.min.js`)) as string, 'base64'))));
const model = await loadGraphModel(tf.io.fromMemory({
  modelTopology: json.modelTopology, format: json.format, weightSpecs: groups.flatMap((g) => g.weights),
  weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.length) as ArrayBuffer,
}));
const PORN = 3;
const { data } = await sharp(photo).removeAlpha().resize(224, 224, { fit: 'fill' }).raw().toBuffer({ resolveWithObject: true });
let x: tf.Tensor4D = tf.tensor4d(Float32Array.from(data, (v) => v / 255), [1, 224, 224, 3]);
const logPorn = (input: tf.Tensor) => tf.sum(tf.log(tf.add(tf.gather(model.predict(input) as tf.Tensor, [PORN], 1), 1e-6))) as tf.Scalar;
const gradient = tf.grad(logPorn);
for (let step = 0; step < 60; step++) {
  const g = gradient(x);
  const next = tf.tidy(() => tf.clipByValue(tf.add(x, tf.mul(tf.sign(g), 1 / 255)), 0, 1)) as tf.Tensor4D;
  x.dispose();
  g.dispose();
  x = next;
  const p = await (model.predict(x) as tf.Tensor).data();
  console.log(`step ${step}: Porn ${p[PORN]!.toFixed(3)}`);
  if (p[PORN]! > 0.97) break;
}
const pixels = await tf.cast(tf.clipByValue(tf.round(tf.mul(x, 255)), 0, 255), 'int32').data();
await sharp(Uint8Array.from(pixels), { raw: { width: 224, height: 224, channels: 3 } }).png().toFile(out);
