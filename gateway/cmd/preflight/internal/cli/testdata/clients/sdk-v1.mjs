// sdk-v1.mjs drives the TypeScript SDK v1 client (@modelcontextprotocol/sdk)
// with StreamableHTTPClientTransport or StdioClientTransport (lib.mjs has
// the plan and the scenario). plan.era other than the SDK's latest is put in
// its initialize request: the SDK then negotiates as a client of that
// version. mcp-remote is driven through this client too, as its stdio
// server command.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

import { answerQuestion, main, pinVersion, plan, run, tap, timeout, toolResult } from './lib.mjs';

await main(async () => {
    const capabilities = {};
    if (plan.elicit === 'form') capabilities.elicitation = { form: {} };
    if (plan.elicit === 'url') capabilities.elicitation = { url: {} };
    const client = new Client({ name: 'preflight-matrix-sdk-v1', version: '0.0.0' }, { capabilities });
    if (plan.elicit) client.setRequestHandler(ElicitRequestSchema, request => answerQuestion(request.params));

    let transport;
    if (plan.transport.http) {
        transport = new StreamableHTTPClientTransport(new URL(plan.transport.http));
    } else {
        const s = plan.transport.stdio;
        transport = new StdioClientTransport({
            command: s.command,
            args: s.args ?? [],
            env: { ...getDefaultEnvironment(), ...(s.env ?? {}) },
            stderr: 'inherit'
        });
    }
    let negotiated;
    tap(transport, m => {
        if (m?.result?.protocolVersion && m.result.serverInfo) negotiated = m.result.protocolVersion;
    });
    if (plan.era && plan.era !== LATEST_PROTOCOL_VERSION) pinVersion(transport, plan.era);
    const opts = { timeout };

    await run({
        async connect() {
            await client.connect(transport, opts);
            return { protocolVersion: negotiated, server: client.getServerVersion()?.name };
        },
        async tools() {
            return (await client.listTools(undefined, opts)).tools.map(t => t.name);
        },
        async prompts() {
            return (await client.listPrompts(undefined, opts)).prompts;
        },
        async resources() {
            return (await client.listResources(undefined, opts)).resources;
        },
        async resourceTemplates() {
            return (await client.listResourceTemplates(undefined, opts)).resourceTemplates;
        },
        async call(req) {
            return toolResult(await client.callTool(req, undefined, opts));
        },
        async close() {
            if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
                await transport.terminateSession();
            }
            await client.close();
        }
    });
});
