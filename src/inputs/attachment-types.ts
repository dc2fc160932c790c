/** What an attachment is once read: the types the readers (attachments.ts, video/) share. */

/** What the tasks read. A video is read as its frames (images) and its sound track (audio). */
export type AttachmentKind = 'image' | 'pdf' | 'audio' | 'text' | 'document';

export interface Attachment {
  kind: AttachmentKind;
  mime: string;
  bytes: Buffer;
  /** Where in the request it came from, e.g. `messages[1].content[0]`. */
  param: string;
  filename?: string;
  /** A picture sampled from a video: its number among the frames taken, and its time in seconds. */
  frame?: { number: number; seconds: number };
}

/** An attachment as read from a request: it also says what the caller sent for it. */
export interface ResolvedAttachment extends Attachment {
  /**
   * SHA-256 (hex) of the bytes the caller sent in this content part, before any reading: every
   * frame and the sound track of one video carry the video's. What is read from a file is lossy
   * (a few frames of many), so the cache keys on this, never on `bytes`.
   */
  sent: string;
}
