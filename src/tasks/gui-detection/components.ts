/** A connected region of foreground pixels: its bounding box and how many pixels it holds. */
export interface Component {
  x: number;
  y: number;
  width: number;
  height: number;
  pixels: number;
}

/**
 * 8-connected components of a binary mask (1 = foreground), by one pass of union-find over the
 * rows; regions under `minPixels` are dropped (specks, noise).
 */
export function connectedComponents(mask: Uint8Array, width: number, height: number, minPixels = 12): Component[] {
  const labels = new Int32Array(width * height);
  const parent: number[] = [0];
  const find = (a: number): number => {
    while (parent[a] !== a) {
      parent[a] = parent[parent[a]!]!;
      a = parent[a]!;
    }
    return a;
  };
  const union = (a: number, b: number) => {
    const ra = find(a);
    const rb = find(b);
    if (ra !== rb) parent[Math.max(ra, rb)] = Math.min(ra, rb);
  };
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      if (!mask[i]) continue;
      const neighbours = [
        x > 0 ? labels[i - 1]! : 0,
        y > 0 ? labels[i - width]! : 0,
        x > 0 && y > 0 ? labels[i - width - 1]! : 0,
        x < width - 1 && y > 0 ? labels[i - width + 1]! : 0,
      ].filter((l) => l > 0);
      if (neighbours.length === 0) {
        parent.push(parent.length);
        labels[i] = parent.length - 1;
      } else {
        const smallest = Math.min(...neighbours);
        labels[i] = smallest;
        for (const n of neighbours) union(smallest, n);
      }
    }
  }
  const boxes = new Map<number, { x0: number; y0: number; x1: number; y1: number; pixels: number }>();
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const label = labels[y * width + x]!;
      if (!label) continue;
      const root = find(label);
      const box = boxes.get(root);
      if (!box) boxes.set(root, { x0: x, y0: y, x1: x, y1: y, pixels: 1 });
      else {
        box.x0 = Math.min(box.x0, x);
        box.y0 = Math.min(box.y0, y);
        box.x1 = Math.max(box.x1, x);
        box.y1 = Math.max(box.y1, y);
        box.pixels++;
      }
    }
  }
  return [...boxes.values()]
    .filter((b) => b.pixels >= minPixels)
    .map((b) => ({ x: b.x0, y: b.y0, width: b.x1 - b.x0 + 1, height: b.y1 - b.y0 + 1, pixels: b.pixels }));
}
