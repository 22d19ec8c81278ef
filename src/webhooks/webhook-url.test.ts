import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPublicAddress } from './webhook-url.ts';

/** Addresses as a URL or a DNS answer may give them, and whether a webhook may be sent there. */
const ADDRESSES: [string, boolean, string][] = [
  ['93.184.215.14', true, 'public IPv4'],
  ['8.8.8.8', true, 'public IPv4'],
  ['127.0.0.1', false, 'loopback'],
  ['10.1.2.3', false, 'private'],
  ['172.16.5.5', false, 'private'],
  ['192.168.0.1', false, 'private'],
  ['169.254.169.254', false, 'link-local (cloud metadata)'],
  ['100.64.0.1', false, 'carrier-grade NAT'],
  ['0.0.0.0', false, 'unspecified'],
  ['192.0.2.1', false, 'documentation'],
  ['224.0.0.1', false, 'multicast'],
  ['255.255.255.255', false, 'broadcast'],
  ['2606:4700::1111', true, 'public IPv6'],
  ['2001:4860:4860::8888', true, 'public IPv6'],
  ['::1', false, 'loopback'],
  ['::', false, 'unspecified'],
  ['fd00::1', false, 'unique local'],
  ['fe80::1', false, 'link-local'],
  ['fec0::1', false, 'site-local (deprecated)'],
  ['ff02::1', false, 'multicast'],
  ['2001:db8::1', false, 'documentation'],
  ['3fff::1', false, 'documentation (RFC 9637)'],
  ['100::1', false, 'discard'],
  ['5f00::1', false, 'outside global unicast (2000::/3)'],
  // IPv4-mapped: judged by the IPv4 address it carries.
  ['::ffff:127.0.0.1', false, 'IPv4-mapped loopback'],
  ['::ffff:7f00:1', false, 'IPv4-mapped loopback, hex'],
  ['::ffff:10.0.0.1', false, 'IPv4-mapped private'],
  ['::ffff:169.254.169.254', false, 'IPv4-mapped metadata'],
  ['::ffff:8.8.8.8', true, 'IPv4-mapped public'],
  // NAT64 well-known prefix: judged by the IPv4 address it carries.
  ['64:ff9b::127.0.0.1', false, 'NAT64 of loopback'],
  ['64:ff9b::7f00:1', false, 'NAT64 of loopback, hex'],
  ['64:ff9b::a9fe:a9fe', false, 'NAT64 of metadata'],
  ['64:ff9b::808:808', true, 'NAT64 of a public address'],
  // Refused whatever they carry.
  ['::127.0.0.1', false, 'IPv4-compatible loopback, as DNS answers print it'],
  ['::7f00:1', false, 'IPv4-compatible loopback, as a URL writes it'],
  ['::10.0.0.1', false, 'IPv4-compatible private'],
  ['::8.8.8.8', false, 'IPv4-compatible public (deprecated form)'],
  ['::ffff:0:127.0.0.1', false, 'IPv4-translated loopback'],
  ['::ffff:0:808:808', false, 'IPv4-translated public'],
  ['64:ff9b:1::7f00:1', false, 'local-use NAT64'],
  ['64:ff9b:1::808:808', false, 'local-use NAT64'],
  ['2002:7f00:1::1', false, '6to4 of loopback'],
  ['2002:808:808::1', false, '6to4 of a public address'],
  ['2001:0:7f00:1::1', false, 'Teredo'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', false, 'Teredo'],
  // Not addresses at all.
  ['fe80::1%eth0', false, 'zone id'],
  ['127.1', false, 'short IPv4 form'],
  ['2130706433', false, 'IPv4 as one number'],
  ['localhost', false, 'a name'],
  ['', false, 'empty'],
];

test('which addresses may receive webhooks', () => {
  for (const [address, expected, what] of ADDRESSES) {
    assert.equal(isPublicAddress(address), expected, `${address} (${what})`);
  }
});
