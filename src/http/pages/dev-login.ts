import type { LoginRequestView } from '../../engine/authorization/index.js';
import { escapeHtml, page } from './page.js';

/** What the development login page shows and posts back. */
export interface DevLoginPage {
  request: LoginRequestView;
  challenge: string;
  csrf: string;
  action: string;
}

/**
 * The development login (`serve --dev-login`, `--demo`): any user name logs in. It says so at
 * the top, shows which application asks and for what, and is usable with the keyboard alone
 * (the name field has focus, Enter signs in).
 */
export function devLoginPage({ request, challenge, csrf, action }: DevLoginPage): string {
  const scopes = request.scope.split(' ').filter(Boolean);
  const scopeList = scopes.length === 0 ? '<p>No particular access (no scope) is asked for.</p>' : `<p>It asks for:</p>\n<ul class="scopes">${scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('')}</ul>`;
  return page(
    `Sign in to ${request.client_name}`,
    `<p class="badge" role="note">Development login: any user name is accepted</p>
<h1>Sign in to ${escapeHtml(request.client_name)}</h1>
<p><strong>${escapeHtml(request.client_name)}</strong> <span class="muted">(<code>${escapeHtml(request.client_id)}</code>)</span> wants you to sign in.</p>
${scopeList}
<form method="post" action="${escapeHtml(action)}">
<input type="hidden" name="login_challenge" value="${escapeHtml(challenge)}">
<input type="hidden" name="csrf_token" value="${escapeHtml(csrf)}">
<label for="username">User name</label>
<input type="text" id="username" name="username" required maxlength="255" autocomplete="username" autofocus spellcheck="false">
<div class="actions">
<button type="submit" name="decision" value="accept" class="primary">Sign in</button>
<button type="submit" name="decision" value="deny" formnovalidate>Cancel</button>
</div>
</form>
<p class="muted">You will return to <code>${escapeHtml(request.redirect_uri)}</code>.</p>
<p class="muted">This page is served by <code>tokenctl serve --dev-login</code> for development only. In production, connect your own login with <code>--login-url</code> (docs/login.md).</p>`,
  );
}
