/** Paths only administrators call: no CORS for them, and crawlers are asked to stay away (robots.txt). */
export const ADMIN_PREFIXES = ['/api/accounts', '/api/api-keys', '/api/webhooks', '/metrics'];
