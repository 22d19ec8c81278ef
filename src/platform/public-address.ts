import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/*
 * Which addresses the service may connect to on behalf of others (webhook receivers) or of its own
 * configuration (anchoring authorities, calendars, the Bitcoin header server): public unicast only.
 */

const cidr = (text: string) => ipaddr.IPv6.parseCIDR(text);

/**
 * IPv6 forms that carry an IPv4 address. Two are judged by the IPv4 address they carry: IPv4-mapped,
 * which a dual-stack socket connects to as that IPv4 address, and NAT64's well-known prefix, which is
 * how an IPv6-only host behind DNS64 reaches an IPv4-only receiver. The others are refused whatever they
 * carry: IPv4-compatible (deprecated), IPv4-translated (SIIT), local-use NAT64 (where the IPv4 address
 * sits depends on the operator's prefix length), 6to4 and Teredo (tunnels whose relays reach IPv4).
 */
const CARRYING_IPV4: { range: [ipaddr.IPv6, number]; judgedByIpv4: boolean }[] = [
  { range: cidr('::ffff:0:0/96'), judgedByIpv4: true },
  { range: cidr('64:ff9b::/96'), judgedByIpv4: true },
  { range: cidr('::/96'), judgedByIpv4: false },
  { range: cidr('::ffff:0:0:0/96'), judgedByIpv4: false },
  { range: cidr('64:ff9b:1::/48'), judgedByIpv4: false },
  { range: cidr('2002::/16'), judgedByIpv4: false },
  { range: cidr('2001::/32'), judgedByIpv4: false },
];
/** Every global unicast address is allocated from 2000::/3; 3fff::/20 is for documentation (RFC 9637). */
const GLOBAL_UNICAST = cidr('2000::/3');
const DOCUMENTATION = cidr('3fff::/20');

/** An address as ipaddr.js reads it, or undefined when it is not one. */
function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const family = isIP(address);
  if (family === 4) return ipaddr.IPv4.parse(address);
  if (family !== 6) return undefined;
  // ipaddr.js reads `::a.b.c.d` (how DNS answers print an IPv4-compatible address) as IPv4-mapped; the
  // URL parser writes every IPv6 address in hex groups, and refuses zone ids.
  try {
    return ipaddr.IPv6.parse(new URL(`http://[${address}]/`).hostname.slice(1, -1));
  } catch {
    return undefined;
  }
}

/**
 * Only public unicast addresses may receive webhooks: no private, loopback, link-local, reserved or
 * metadata range, and no IPv6 form that leads to an IPv4 address that is not public.
 */
export function isPublicAddress(address: string): boolean {
  const parsed = parseAddress(address);
  if (parsed === undefined) return false;
  if (parsed instanceof ipaddr.IPv4) return parsed.range() === 'unicast';
  const carrier = CARRYING_IPV4.find(({ range }) => parsed.match(range));
  if (carrier !== undefined) {
    if (!carrier.judgedByIpv4) return false;
    return new ipaddr.IPv4(parsed.toByteArray().slice(12)).range() === 'unicast';
  }
  return parsed.match(GLOBAL_UNICAST) && !parsed.match(DOCUMENTATION) && parsed.range() === 'unicast';
}
