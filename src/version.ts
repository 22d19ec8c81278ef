/** The service version (SPEC.md §9), reported by /health, /api/capabilities and /openapi.json. */
export const SERVICE_VERSION = '0.2.1';
