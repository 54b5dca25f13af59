import { describe, expect, it } from 'vitest';
import { ByteWriter } from '../../src/events/bytes.js';

describe('ByteWriter', () => {
  it('writes latin1 and UTF-8 text one after the other, growing as it needs', () => {
    const w = new ByteWriter(4);
    const text = 'ünï "q" 😀 ' + 'x'.repeat(10_000);
    w.latin1('{"a":').utf8(JSON.stringify(text)).latin1('}');
    expect(JSON.parse(w.view().toString('utf8'))).toEqual({ a: text });
    expect(w.view().equals(Buffer.from(`{"a":${JSON.stringify(text)}}`, 'utf8'))).toBe(true);
  });

  it('copies bytes as they are, between text, growing as it needs', () => {
    const utf8 = Buffer.from('"ünï 😀"', 'utf8');
    const w = new ByteWriter(2).latin1('[').bytes(utf8.subarray(0, 0)).bytes(utf8).latin1(',').bytes(Buffer.from(JSON.stringify('x'.repeat(5_000)))).latin1(']');
    expect(JSON.parse(w.view().toString('utf8'))).toEqual(['ünï 😀', 'x'.repeat(5_000)]);
  });

  it('base64url of any length, across its 48 KiB pieces, is Buffer.toString("base64url")', () => {
    for (const n of [0, 1, 2, 3, 49_151, 49_152, 49_153, 150_001]) {
      const bytes = Buffer.alloc(n, 0);
      for (let i = 0; i < n; i++) bytes[i] = (i * 7919) & 0xff;
      const w = new ByteWriter(8).latin1('>');
      w.base64url(bytes.subarray(0, n));
      expect(w.view().toString('latin1')).toBe('>' + bytes.toString('base64url'));
    }
  });

  it('reset empties it; a view is of what was written since', () => {
    const w = new ByteWriter(16).latin1('first');
    w.reset().latin1('second');
    expect(w.view().toString('latin1')).toBe('second');
    expect(w.view(1, 3).toString('latin1')).toBe('ec');
    // Memory grown past what it keeps is given back: what is written next is still right.
    w.reset(8).latin1('y'.repeat(100));
    expect(w.reset(8).latin1('z').view().toString('latin1')).toBe('z');
  });
});
