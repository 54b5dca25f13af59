import Audit from './audit.js';
import ClientCreate from './client/create.js';
import ClientDelete from './client/delete.js';
import ClientList from './client/list.js';
import ClientRotateSecret from './client/rotate-secret.js';
import ClientShow from './client/show.js';
import ClientUpdate from './client/update.js';
import Completion from './completion.js';
import Introspect from './introspect.js';
import Login from './login.js';
import Migrate from './migrate.js';
import ProfileAdd from './profile/add.js';
import ProfileCheck from './profile/check.js';
import ProfileList from './profile/list.js';
import ProfileRemove from './profile/remove.js';
import Purge from './purge.js';
import ReceiverAdd from './receiver/add.js';
import ReceiverList from './receiver/list.js';
import ReceiverRemove from './receiver/remove.js';
import ReceiverRetry from './receiver/retry.js';
import ReceiverShow from './receiver/show.js';
import ReceiverUpdate from './receiver/update.js';
import Refresh from './refresh.js';
import Revoke from './revoke.js';
import Serve from './serve.js';
import SigningKeyList from './signing-key/list.js';
import SigningKeyRotate from './signing-key/rotate.js';
import Status from './status.js';
import TokenIssue from './token/issue.js';
import TokenList from './token/list.js';
import Version from './version.js';

/** Every command by its id (oclif explicit discovery: package.json `oclif.commands`). */
export const COMMANDS = {
  audit: Audit,
  'client:create': ClientCreate,
  'client:delete': ClientDelete,
  'client:list': ClientList,
  'client:rotate-secret': ClientRotateSecret,
  'client:show': ClientShow,
  'client:update': ClientUpdate,
  completion: Completion,
  introspect: Introspect,
  login: Login,
  migrate: Migrate,
  'profile:add': ProfileAdd,
  'profile:check': ProfileCheck,
  'profile:list': ProfileList,
  'profile:remove': ProfileRemove,
  purge: Purge,
  'receiver:add': ReceiverAdd,
  'receiver:list': ReceiverList,
  'receiver:remove': ReceiverRemove,
  'receiver:retry': ReceiverRetry,
  'receiver:show': ReceiverShow,
  'receiver:update': ReceiverUpdate,
  refresh: Refresh,
  revoke: Revoke,
  serve: Serve,
  'signing-key:list': SigningKeyList,
  'signing-key:rotate': SigningKeyRotate,
  status: Status,
  'token:issue': TokenIssue,
  'token:list': TokenList,
  version: Version,
};
