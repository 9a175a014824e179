// langchain.mjs drives @langchain/mcp-adapters' MultiServerMCPClient as a
// LangChain agent uses it (lib.mjs has the plan and the scenario): the
// gateway is its one server, over streamable HTTP or stdio; getTools loads
// the tools as LangChain tools, and a call is tool.invoke(arguments), which
// throws a ToolException for a tool error. Prompts, resources and
// templates are listed through the client's listResources and the SDK v1
// client it keeps per server (getClient). The adapters declare no
// elicitation.

import { MultiServerMCPClient } from '@langchain/mcp-adapters';

import { main, plan, run, timeout } from './lib.mjs';

await main(async () => {
    let server;
    if (plan.transport.http) {
        server = { transport: 'http', url: plan.transport.http, automaticSSEFallback: false };
    } else {
        const s = plan.transport.stdio;
        server = { transport: 'stdio', command: s.command, args: s.args ?? [], stderr: 'inherit' };
        if (s.env) server.env = { ...process.env, ...s.env };
    }
    const client = new MultiServerMCPClient({
        mcpServers: { preflight: server },
        throwOnLoadError: true,
        onConnectionError: 'throw',
        defaultToolTimeout: timeout
    });
    let tools = [];

    await run({
        async connect() {
            tools = await client.getTools();
            return {};
        },
        async tools() {
            return tools.map(t => t.name);
        },
        async prompts() {
            const c = await client.getClient('preflight');
            return (await c.listPrompts()).prompts;
        },
        async resources() {
            return (await client.listResources()).preflight;
        },
        async resourceTemplates() {
            const c = await client.getClient('preflight');
            return (await c.listResourceTemplates()).resourceTemplates;
        },
        async call(req) {
            const tool = tools.find(t => t.name === req.name);
            if (!tool) throw new Error(`no tool ${req.name} among ${tools.map(t => t.name).join(', ')}`);
            try {
                const out = await tool.invoke(req.arguments);
                return { isError: false, text: typeof out === 'string' ? out : JSON.stringify(out) };
            } catch (err) {
                if (err?.name !== 'ToolException') throw err;
                return { isError: true, text: err.message };
            }
        },
        async close() {
            await client.close();
        }
    });
});
