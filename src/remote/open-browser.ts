import { spawn } from 'node:child_process';

/** Opens a URL in the user's browser: resolves once it is started (true) or could not be (false), not when the user is done. */
export type OpenUrl = (url: string) => Promise<boolean>;

/** What decides whether and how a browser can be opened here. */
export interface BrowserEnvironment {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  /** Whether stdout or stderr is a terminal: someone is there to use the browser. */
  interactive: boolean;
}

/** A command to start, without a shell: the URL is one argument and never parsed as shell text. */
export interface OpenCommand {
  command: string;
  args: string[];
}

/**
 * How to open `url` here, or null: never in CI; `$BROWSER` when set (as gh, git and Python's
 * webbrowser honour it); otherwise the platform's opener, only for someone at a terminal, and on
 * Linux and the BSDs only with a display to show it on.
 */
export function browserCommand(url: string, e: BrowserEnvironment): OpenCommand | null {
  if (e.env.CI) return null;
  const browser = e.env.BROWSER?.trim();
  if (browser) return { command: browser, args: [url] };
  if (!e.interactive) return null;
  if (e.platform === 'darwin') return { command: 'open', args: [url] };
  // Not cmd's `start`: cmd would read the URL's & as a command separator and expand %…% in it.
  if (e.platform === 'win32') return { command: 'rundll32.exe', args: ['url.dll,FileProtocolHandler', url] };
  if (!e.env.DISPLAY && !e.env.WAYLAND_DISPLAY) return null;
  return { command: 'xdg-open', args: [url] };
}

/** An {@link OpenUrl} that starts {@link browserCommand}'s command detached, or does nothing when there is none. */
export function systemBrowser(e: BrowserEnvironment): OpenUrl {
  return (url) => {
    const cmd = browserCommand(url, e);
    if (cmd === null) return Promise.resolve(false);
    return new Promise((resolve) => {
      const child = spawn(cmd.command, cmd.args, { detached: true, stdio: 'ignore' });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    });
  };
}
