import { ConfigError, loadConfig, type Config } from '../../config.ts';
import { UsageError } from '../output.ts';

/**
 * The service's own configuration (docs/deploy.md), read as the service reads it, with `overrides` of
 * the environment; a setting it refuses is a usage error that names it.
 */
export function serviceConfig(overrides: Record<string, string | undefined> = {}): Config {
  const env = { ...process.env };
  for (const [name, value] of Object.entries(overrides)) if (value !== undefined) env[name] = value;
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.problems.join('; '));
    throw error;
  }
}
