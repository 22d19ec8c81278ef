import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks v1 signature: `v1,` + base64 HMAC-SHA256 over `${id}.${timestamp}.${body}`, keyed by
 * the base64-decoded bytes after `whsec_` (not the string itself).
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): string {
  if (!secret.startsWith('whsec_')) throw new TypeError('a webhook secret starts with whsec_');
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64');
  return `v1,${mac}`;
}
