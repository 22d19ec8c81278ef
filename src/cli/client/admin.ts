import type { HashproofClient } from '../../client/client.ts';
import { HELP } from '../help.ts';
import { EXIT, printJson, UsageError } from '../output.ts';

/** The options of `hashproof admin`. */
interface AdminValues {
  account?: string;
  name?: string;
  owner?: string;
  'webhook-url'?: string;
  events?: string;
}

/**
 * `hashproof admin <area> <action> [id]`: the administrator's calls over HTTP, with the key of
 * SERVICE_ADMIN_KEY; prints the service's JSON answer. An account id is the argument after the action
 * or `--account` (the option `search` takes), one of the two.
 */
export async function admin(
  client: HashproofClient,
  [area, action, arg, ...extra]: string[],
  values: AdminValues,
): Promise<number> {
  if (!process.env.SERVICE_ADMIN_KEY) throw new UsageError('set SERVICE_ADMIN_KEY to the administrator key');
  if (extra.length > 0) throw new UsageError(`admin ${area} ${action} takes one id, got ${extra.join(' ')}`);
  const need = (what: string) => {
    if (arg === undefined) throw new UsageError(`admin ${area} ${action} needs ${what}`);
    return arg;
  };
  const account = () => {
    if (values.account !== undefined && arg !== undefined && values.account !== arg)
      throw new UsageError(
        `admin ${area} ${action}: two account ids, ${arg} and --account ${values.account}`,
      );
    const id = values.account ?? arg;
    if (id === undefined)
      throw new UsageError(
        `admin ${area} ${action} needs an account id: <account-id> or --account <account-id>`,
      );
    return id;
  };
  const a = client.admin;
  const run: Record<string, () => Promise<unknown>> = {
    'accounts list': () => a.listAccounts(),
    'accounts create': () =>
      a.createAccount({
        ...(values.name ? { name: values.name } : {}),
        ...(values.owner ? { ownerLabel: values.owner } : {}),
      }),
    'keys list': () => a.listApiKeys(account()),
    'keys create': () => a.createApiKey(account(), values.name ? { name: values.name } : {}),
    'keys revoke': () => a.revokeApiKey(need('a key id')),
    'webhooks list': () => a.listWebhooks(account()),
    'webhooks create': () => {
      if (!values['webhook-url']) throw new UsageError('admin webhooks create needs --webhook-url');
      return a.createWebhook(account(), {
        url: values['webhook-url'],
        ...(values.events ? { events: values.events.split(',') } : {}),
        ...(values.name ? { name: values.name } : {}),
      });
    },
    'webhooks test': () => a.testWebhook(need('a webhook id')),
  };
  const operation = run[`${area} ${action}`];
  if (operation === undefined) throw new UsageError(HELP.admin);
  printJson(await operation());
  return EXIT.ok;
}
