/** What a form POST got back: a network failure or a timeout is status 0 (counted, never thrown). */
export interface Reply {
  status: number;
  body: Record<string, unknown>;
}

/** One form POST to `url`, its body parsed as JSON (or kept as `text`); gives up after `timeoutMs` when given. */
export async function postForm(url: string, form: Record<string, string>, headers: Record<string, string> = {}, timeoutMs?: number): Promise<Reply> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(form).toString(),
      ...(timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
    });
    const text = await res.text();
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(text) as Record<string, unknown>;
    } catch {
      body = { text };
    }
    return { status: res.status, body };
  } catch (error) {
    return { status: 0, body: { error: String(error) } };
  }
}
