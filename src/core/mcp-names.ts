/**
 * The names of hashproof's two Model Context Protocol servers (docs/agents.md), shared by the servers
 * and the documents that advertise them, so the tools an agent is told of are the tools it gets.
 */

/** The path of the service's Streamable HTTP endpoint. */
export const MCP_PATH = '/mcp';

/** The tools of the service's endpoint `/mcp`, in the order `tools/list` answers them. */
export const REMOTE_MCP_TOOLS = [
  'notarize',
  'get_proof',
  'verify_proof',
  'search_proofs',
  'recent_proofs',
] as const;
export type RemoteMcpTool = (typeof REMOTE_MCP_TOOLS)[number];

/** The subcommand of `hashproof` that serves MCP on standard input and output. */
export const LOCAL_MCP_COMMAND = 'mcp';

/** The tools of `hashproof mcp`, in the order `tools/list` answers them. */
export const LOCAL_MCP_TOOLS = [
  'stamp_file',
  'stamp_hash',
  'verify_file',
  'get_proof',
  'search_proofs',
] as const;
export type LocalMcpTool = (typeof LOCAL_MCP_TOOLS)[number];
