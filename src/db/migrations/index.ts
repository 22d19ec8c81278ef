/**
 * What every migration is given. It lives apart from the list of migrations (provider.ts) so that the
 * migrations, which import it, and the list, which imports them, form no cycle.
 */
export interface MigrationContext {
  engine: 'sqlite' | 'postgres';
}
