import { describe, expect, it } from 'vitest';
import { MIN_VERIFICATION_INTERVAL_S, streamSettingsOf } from '../../src/engine/stream-settings.js';
import { makeEngine } from '../helpers/engine.js';
import { createClient } from '../helpers/server.js';

/**
 * SSF 1.0 §8.1.4.2 verification against §8.1.2.1 stream status, in the engine: what is handed to
 * the caller to push now (`push`), and what is kept with the stream instead. A paused stream
 * transmits no event, the verification event included: it is held until the stream is enabled.
 */
describe('verification events and stream status', () => {
  const setUp = async () => {
    const { engine, clock, store } = makeEngine();
    const client = await createClient(engine, 'rs', { scope: 'ssf.manage' });
    const push = (await engine.createStream(client.id, { delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: 'https://rs.example.test/events' } })).id;
    const settings = async (id: string) => streamSettingsOf((await store.getReceiver(id))!.stream);
    const status = (id: string, value: string) => engine.setStreamStatus(client.id, { stream_id: id, status: value });
    const verify = (id: string, state: string) => {
      clock.advance(MIN_VERIFICATION_INTERVAL_S * 1000);
      return engine.requestVerification(client.id, { stream_id: id, state });
    };
    return { engine, client, push, settings, status, verify };
  };

  it('an enabled push stream: pushed at once, nothing kept', async () => {
    const { push, settings, verify } = await setUp();
    const v = await verify(push, 'now');
    expect(v.push).toEqual({ jti: v.jti, state: 'now' });
    expect((await settings(push)).verification).toBeUndefined();
  });

  it('a paused push stream: held, the newest request replacing an older one, handed over once enabled, and only then', async () => {
    const { push, settings, status, verify } = await setUp();
    expect((await status(push, 'paused')).push).toBeUndefined();
    const first = await verify(push, 'first');
    expect(first.push).toBeUndefined();
    expect((await settings(push)).verification).toMatchObject({ jti: first.jti, state: 'first' });
    const second = await verify(push, 'second');
    expect(second.push).toBeUndefined();
    expect((await settings(push)).verification).toMatchObject({ jti: second.jti, state: 'second' });
    // Paused again, with its reason: still held.
    expect((await status(push, 'paused')).push).toBeUndefined();
    expect((await settings(push)).verification).toMatchObject({ jti: second.jti });
    const enabled = await status(push, 'enabled');
    expect(enabled.push).toEqual({ jti: second.jti, state: 'second' });
    expect(streamSettingsOf(enabled.stream.stream)).toMatchObject({ status: 'enabled' });
    expect((await settings(push)).verification).toBeUndefined();
    expect((await status(push, 'enabled')).push).toBeUndefined();
  });

  it('a paused push stream that is disabled drops what it held: enabled later, it sends nothing of it', async () => {
    const { push, settings, status, verify } = await setUp();
    await status(push, 'paused');
    await verify(push, 'held');
    expect((await status(push, 'disabled')).push).toBeUndefined();
    expect((await settings(push)).verification).toBeUndefined();
    expect((await status(push, 'enabled')).push).toBeUndefined();
  });

  it('a poll stream: never pushed; its verification stays with the stream through pause and resume, for the poll', async () => {
    const { engine, client, settings, status, verify } = await setUp();
    const poll = (await engine.createStream(client.id, { delivery: { method: 'urn:ietf:rfc:8936' } })).id;
    await status(poll, 'paused');
    const v = await verify(poll, 'polled');
    expect(v.push).toBeUndefined();
    expect((await status(poll, 'enabled')).push).toBeUndefined();
    expect((await settings(poll)).verification).toMatchObject({ jti: v.jti, state: 'polled' });
  });
});
