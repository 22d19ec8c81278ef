import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { AppError } from '../errors.ts';
import { isPublicAddress } from '../platform/public-address.ts';

export { isPublicAddress } from '../platform/public-address.ts';

function invalidUrl(message: string): AppError {
  return new AppError('invalid_request', `Invalid request: /url ${message}`, {
    errors: [{ location: 'body', path: '/url', message, keyword: 'webhookUrl' }],
  });
}

/**
 * Checks a webhook URL when it is registered: https only, no credentials, and a host that is, or
 * resolves only to, public addresses. The sender checks the resolved address again at connect time,
 * since DNS can change after registration. `allowPrivate` (WEBHOOK_ALLOW_PRIVATE_URLS) lifts all of it.
 */
export async function validateWebhookUrl(raw: string, allowPrivate: boolean): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidUrl('is not an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
    throw invalidUrl(allowPrivate ? 'must use http: or https:' : 'must use https:');
  }
  if (url.username || url.password) throw invalidUrl('must not contain credentials');
  if (url.hash) throw invalidUrl('must not contain a fragment');
  if (allowPrivate) return url.href;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) {
    if (!isPublicAddress(host)) throw invalidUrl('points to a private, loopback or reserved address');
    return url.href;
  }
  let addresses: { address: string }[];
  try {
    addresses = await lookup(host, { all: true, verbatim: true });
  } catch {
    throw invalidUrl(`has a host name that does not resolve (${host})`);
  }
  if (addresses.length === 0 || addresses.some((a) => !isPublicAddress(a.address))) {
    throw invalidUrl('resolves to a private, loopback or reserved address');
  }
  return url.href;
}
