import type { AttachmentLimits } from '../inputs/attachments.ts';

/** The service's default bounds on attachments, smaller where a test needs it. */
export const testAttachmentLimits = (overrides: Partial<AttachmentLimits> = {}): AttachmentLimits => ({
  inlineMaxBytes: 1024 * 1024,
  imageMaxPixels: 40_000_000,
  fetch: { maxBytes: 1024 * 1024, timeoutMs: 2000, maxRedirects: 3, allowLoopback: true },
  video: { timeoutMs: 120_000, memoryMb: 1024, maxSeconds: 900, maxFrames: 8, maxPixels: 40_000_000 },
  documentMaxInflatedBytes: 100 * 1024 * 1024,
  ...overrides,
});
