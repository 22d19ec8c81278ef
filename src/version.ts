/** The service version, reported by /health, /api/capabilities and /openapi.json (docs/api.md). */
export const SERVICE_VERSION = '0.2.1';
