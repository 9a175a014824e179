// ai-sdk.mjs drives the AI SDK's MCP client (@ai-sdk/mcp's createMCPClient,
// which it also exports as experimental_createMCPClient) as an app hands
// its tools to a model (lib.mjs has the plan and the scenario):
// {type: "http"} or the stdio transport of @ai-sdk/mcp/mcp-stdio,
// client.tools() for the AI SDK tools, and a call is the tool's execute,
// as generateText runs it. It declares form elicitation (capabilities
// {elicitation: {}}) when plan.elicit is "form"; it knows no URL mode.

import { ElicitationRequestSchema, createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';

import { answerQuestion, emit, main, phase, plan, run, toolResult } from './lib.mjs';

await main(async () => {
    let transport;
    if (plan.transport.http) {
        transport = { type: 'http', url: plan.transport.http };
    } else {
        const s = plan.transport.stdio;
        const params = { command: s.command, args: s.args ?? [], stderr: 'inherit' };
        if (s.env) params.env = { ...process.env, ...s.env };
        transport = new Experimental_StdioMCPTransport(params);
    }
    const capabilities = plan.elicit === 'form' ? { elicitation: {} } : undefined;
    let client;
    let tools = {};

    await run({
        async connect() {
            client = await createMCPClient({
                transport,
                name: 'preflight-matrix-ai-sdk',
                capabilities,
                onUncaughtError: err => emit({ op: 'uncaught', phase, error: String(err?.message ?? err) })
            });
            if (plan.elicit === 'form') {
                client.onElicitationRequest(ElicitationRequestSchema, request => answerQuestion(request.params));
            }
            return { server: client.serverInfo?.name };
        },
        async tools() {
            tools = await client.tools();
            return Object.keys(tools);
        },
        async prompts() {
            return (await client.experimental_listPrompts()).prompts;
        },
        async resources() {
            return (await client.listResources()).resources;
        },
        async resourceTemplates() {
            return (await client.listResourceTemplates()).resourceTemplates;
        },
        async call(req) {
            const tool = tools[req.name];
            if (!tool) throw new Error(`no tool ${req.name} among ${Object.keys(tools).join(', ')}`);
            return toolResult(await tool.execute(req.arguments, { toolCallId: `call-${Date.now()}`, messages: [] }));
        },
        async close() {
            await client?.close();
        }
    });
});
