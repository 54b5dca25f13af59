/**
 * A growable byte buffer that text is written into: how a poll answer and its SETs are made
 * without a string or buffer of the answer's size for each step (claims JSON, its UTF-8, its
 * base64url, the signing input, the SET, the answer's JSON, its bytes). Under load an answer is
 * a few hundred kilobytes, and every transient string or buffer of that size is fresh memory:
 * page faults, zeroed pages and garbage. A writer kept from one use to the
 * next (see {@link ByteWriter.reset}) reuses its memory.
 */
export class ByteWriter {
  private buf: Buffer;
  /** Bytes written so far. */
  length = 0;

  constructor(initialSize = 16 * 1024) {
    this.buf = Buffer.allocUnsafeSlow(initialSize);
  }

  /** Empties it for reuse; memory grown past `keepUpTo` bytes is given back. */
  reset(keepUpTo = KEEP_UP_TO): this {
    this.length = 0;
    if (this.buf.length > keepUpTo) this.buf = Buffer.allocUnsafeSlow(keepUpTo);
    return this;
  }

  /** Text whose characters are all below U+0100 (ASCII, in practice), one byte each. */
  latin1(text: string): this {
    this.room(text.length);
    this.length += this.buf.write(text, this.length, 'latin1');
    return this;
  }

  /** Any text, as UTF-8. */
  utf8(text: string): this {
    // At most three bytes per UTF-16 unit (a surrogate pair: four bytes for two units).
    this.room(text.length * 3);
    this.length += this.buf.write(text, this.length, 'utf8');
    return this;
  }

  /** Bytes as they are (UTF-8 text already, say). */
  bytes(bytes: Uint8Array): this {
    this.room(bytes.length);
    this.buf.set(bytes, this.length);
    this.length += bytes.length;
    return this;
  }

  /** `bytes` as base64url without padding (RFC 7515 §2), in pieces: no string of its whole size. */
  base64url(bytes: Uint8Array): this {
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.room(Math.ceil((view.length * 4) / 3));
    // A piece of a multiple of 3 bytes encodes to whole quartets without padding, so the
    // pieces' encodings, one after the other, are the encoding of the whole.
    for (let at = 0; at < view.length; at += BASE64_PIECE) {
      this.length += this.buf.write(view.toString('base64url', at, Math.min(at + BASE64_PIECE, view.length)), this.length, 'latin1');
    }
    return this;
  }

  /** The bytes written, as a view of its memory: valid until the next write or reset. */
  view(start = 0, end = this.length): Buffer {
    return this.buf.subarray(start, end);
  }

  private room(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    const bigger = Buffer.allocUnsafeSlow(Math.max(need, this.buf.length * 2));
    this.buf.copy(bigger, 0, 0, this.length);
    this.buf = bigger;
  }
}

/** 48 KiB, a multiple of 3: its base64 (64 Ki characters) stays a young-generation string. */
const BASE64_PIECE = 3 * 16 * 1024;
/** What a reused writer keeps at most between uses (the largest poll answers are ~300 kB). */
const KEEP_UP_TO = 1024 * 1024;

