import sharp from 'sharp';
import { type Component, connectedComponents } from './components.ts';

export type ShapeKind = 'button' | 'input' | 'icon';
export interface Shape { kind: ShapeKind; x: number; y: number; width: number; height: number }

/** How far a pixel's grey level must be from the background's to count as foreground. */
const CONTRAST = 40;

/**
 * The widget-like regions of a screenshot: connected regions of pixels unlike the background,
 * sorted by shape into buttons (filled wide boxes), inputs (wide boxes drawn as an outline) and
 * icons (small and squarish). A pass over every pixel in JavaScript: it runs in the GUI detector's
 * worker process, and only the regions that look like widgets come back.
 */
export async function findShapes(image: Uint8Array): Promise<{ width: number; height: number; shapes: Shape[] }> {
  const { data, info } = await sharp(image).flatten({ background: '#ffffff' }).greyscale().raw().toBuffer({ resolveWithObject: true });
  const { width, height } = info;
  const background = modeOf(data);
  const mask = new Uint8Array(width * height);
  for (let i = 0; i < mask.length; i++) mask[i] = Math.abs(data[i]! - background) > CONTRAST ? 1 : 0;
  const shapes: Shape[] = [];
  for (const region of connectedComponents(mask, width, height)) {
    const kind = shapeOf(region);
    if (kind) shapes.push({ kind, x: region.x, y: region.y, width: region.width, height: region.height });
  }
  return { width, height, shapes };
}

function shapeOf(r: Component): ShapeKind | undefined {
  const aspect = r.width / r.height;
  const fill = r.pixels / (r.width * r.height);
  if (r.width >= 40 && r.height >= 16 && r.height <= 120 && aspect >= 1.5) {
    if (fill >= 0.5) return 'button';
    if (fill <= 0.25) return 'input';
    return undefined;
  }
  if (r.width >= 10 && r.height >= 10 && r.width <= 64 && r.height <= 64 && aspect >= 0.6 && aspect <= 1.6) return 'icon';
  return undefined;
}

function modeOf(grey: Buffer): number {
  const counts = new Uint32Array(256);
  for (const v of grey) counts[v]!++;
  return counts.indexOf(Math.max(...counts));
}
