// sdk-v2.mjs drives the TypeScript SDK v2 client (@modelcontextprotocol/client)
// with its streamable HTTP or stdio transport (lib.mjs has the plan and
// the scenario). plan.era "2026-07-28" pins that era (server/discover, no
// sessions; a question comes back as input_required, which the SDK fulfils
// with the same elicitation handler); any other era is the legacy
// initialize handshake.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { answerQuestion, main, plan, run, timeout, toolResult } from './lib.mjs';

await main(async () => {
    const capabilities = {};
    if (plan.elicit === 'form') capabilities.elicitation = { form: {} };
    if (plan.elicit === 'url') capabilities.elicitation = { url: {} };
    const versionNegotiation = plan.era === '2026-07-28' ? { mode: { pin: plan.era } } : { mode: 'legacy' };
    const client = new Client({ name: 'preflight-matrix-sdk-v2', version: '0.0.0' }, { capabilities, versionNegotiation });
    if (plan.elicit) client.setRequestHandler('elicitation/create', request => answerQuestion(request.params));

    let transport;
    if (plan.transport.http) {
        transport = new StreamableHTTPClientTransport(new URL(plan.transport.http));
    } else {
        const s = plan.transport.stdio;
        const params = { command: s.command, args: s.args ?? [], stderr: 'inherit' };
        if (s.env) params.env = { ...process.env, ...s.env };
        transport = new StdioClientTransport(params);
    }
    const opts = { timeout };

    await run({
        async connect() {
            await client.connect(transport, { timeout });
            return {
                protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
                era: client.getProtocolEra() ?? null,
                server: client.getServerVersion()?.name
            };
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
            return toolResult(await client.callTool(req, opts));
        },
        async close() {
            if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
                await transport.terminateSession();
            }
            await client.close();
        }
    });
});
