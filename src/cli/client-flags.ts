import { Flags } from '@oclif/core';
import { CLIENT_GRANT_TYPES } from '../engine/client-settings.js';

/** The client settings of the authorization code flow and the grants (contract 5), as `client create` takes them. */
export function clientSettingFlags() {
  return {
    'redirect-uri': Flags.string({
      description: 'A redirect URI for the authorization code flow, matched exactly (a loopback http://127.0.0.1/… with any port); repeat for several',
      multiple: true,
      helpGroup: 'LOGIN',
      helpValue: '<uri>',
    }),
    'grant-type': Flags.string({
      description: 'A grant the client may use; repeat for several [default: authorization_code and refresh_token with --redirect-uri, else refresh_token]',
      multiple: true,
      options: [...CLIENT_GRANT_TYPES],
      helpGroup: 'LOGIN',
    }),
    'login-provider': Flags.boolean({
      description: 'The operator\'s login app: may read and answer login requests (docs/login.md)',
      helpGroup: 'LOGIN',
      allowNo: true,
    }),
    'require-dpop': Flags.boolean({
      description: 'Refuse the client\'s token requests without a DPoP proof (RFC 9449): its tokens are always bound to its key (docs/dpop.md)',
      helpGroup: 'LOGIN',
      allowNo: true,
    }),
  };
}
