import chalk, { Chalk, type ChalkInstance } from 'chalk';
import type { TokenState } from '../../store/store.js';

/**
 * The one chalk instance tokenctl renders with. chalk 5 honours FORCE_COLOR, `--no-color` and a
 * non-TTY stdout, but not NO_COLOR (https://no-color.org): a non-empty NO_COLOR turns colour off.
 */
export const color: ChalkInstance = process.env.NO_COLOR ? new Chalk({ level: 0 }) : chalk;

/** A verdict or state as shown to operators. */
export type DisplayState = TokenState | 'not_yet_valid' | 'unknown';

const STATE_LABEL: Record<DisplayState, string> = {
  active: 'active',
  expired: 'expired',
  revoked: 'revoked',
  not_yet_valid: 'not yet valid',
  unknown: 'unknown',
};

/** Active green, expired yellow, revoked red; the rest dim. */
export function paintState(state: DisplayState, text: string = STATE_LABEL[state]): string {
  switch (state) {
    case 'active':
      return color.green(text);
    case 'expired':
      return color.yellow(text);
    case 'revoked':
      return color.red(text);
    case 'not_yet_valid':
      return color.cyan(text);
    default:
      return color.dim(text);
  }
}

export function stateLabel(state: DisplayState): string {
  return STATE_LABEL[state];
}

/** Short label of a token type, for tables. */
export function typeLabel(type: 'access_token' | 'refresh_token'): string {
  return type === 'access_token' ? 'access' : 'refresh';
}
