import { LOCAL_MCP_COMMAND, LOCAL_MCP_TOOLS, MCP_PATH, REMOTE_MCP_TOOLS } from '../core/mcp-names.ts';
import type { McpSetup } from './document-schemas.ts';
import type { Facts } from './facts.ts';

/**
 * The `mcpServers` configuration of hashproof's two MCP servers (docs/agents.md), built here only: the
 * agents' documents (/api/capabilities, /api/quickstart, /agents, /llms.txt) all show this one.
 */

/** Where a checkout of hashproof is, in the local entry; the reader writes its absolute path instead. */
export const CHECKOUT_PLACEHOLDER = '/path/to/hashproof';

/** The header of an account's API key, on the MCP connection as on every request. */
const API_KEY_HEADER = 'X-Service-Key';

export function mcpSetup(facts: Facts): McpSetup {
  const url = facts.url(MCP_PATH);
  return {
    remote: {
      transport: 'streamable-http',
      url,
      tools: [...REMOTE_MCP_TOOLS],
      apiKeyHeader: API_KEY_HEADER,
      configuration: { mcpServers: { hashproof: { type: 'http', url } } },
    },
    local: {
      transport: 'stdio',
      command: `hashproof ${LOCAL_MCP_COMMAND}`,
      tools: [...LOCAL_MCP_TOOLS],
      placeholders: {
        [CHECKOUT_PLACEHOLDER]:
          'the absolute path of a checkout of hashproof where `npm install` ran (its node_modules holds the ' +
          'Node 24 it runs on); a host starts the server in a folder of its own choosing',
      },
      configuration: {
        mcpServers: {
          hashproof: {
            command: `${CHECKOUT_PLACEHOLDER}/node_modules/.bin/node`,
            args: [`${CHECKOUT_PLACEHOLDER}/src/cli/main.ts`, LOCAL_MCP_COMMAND],
            env: { HASHPROOF_URL: facts.url('') },
          },
        },
      },
    },
    page: facts.url('/agents'),
  };
}

/** A configuration file as a host reads it, and as the pages and /llms.txt print it. */
export function configurationText(configuration: object): string {
  return JSON.stringify(configuration, null, 2);
}
