// client.mjs drives the real TypeScript MCP SDK v2 client
// (@modelcontextprotocol/client, pinned in package.json) through a plan and
// prints what it saw. It is run by the Go tests in package interop.
//
// Input: one JSON document, read from the file named by the first argument or
// else from stdin:
//
//   {
//     "transport": {"http": "http://127.0.0.1:PORT/mcp"}
//               | {"stdio": {"command": "...", "args": [...], "env": {...}, "cwd": "..."}},
//     "era": "2026-07-28" | "legacy" | "2025-11-25" | "auto",
//     "extensions": {"io.modelcontextprotocol/tool-resolution": {}},   // optional
//     "capabilities": {...},       // optional, merged under the client capabilities
//     "timeoutMs": 10000,          // optional, per request and for connect
//     "wire": true,                // optional: add each step's inbound JSON-RPC messages, as received
//     "steps": [
//       {"op": "info"},
//       {"op": "list"},
//       {"op": "call", "name": "echo", "arguments": {...}},
//       {"op": "request", "method": "tools/resolve", "params": {...}}
//     ]
//   }
//
// Output: one JSON document on stdout:
//
//   {"protocolVersion": "...", "era": "modern"|"legacy", "serverCapabilities": {...},
//    "serverInfo": {...},
//    "results": [{"op": "...", "ok": true, "result": {...}}
//              | {"op": "...", "ok": false, "error": {"code": N, "message": "...", "data": ...}}]}
//
// A result is what the SDK handed back, after its own decoding: the SDK drops
// "resultType" from every result, and the typed calls (list, call) drop
// fields their schemas do not know. With "wire": true each result also has
// "wire": the messages the transport delivered during that step, untouched.
// An error from the SDK itself rather than the peer has "sdkCode" (a string
// such as "REQUEST_TIMEOUT") instead of a numeric "code". An HTTP error
// status has "httpStatus"; when its body is a JSON-RPC error the error also
// has that body's "code", "message" and "data" (the SDK's text is then in
// "sdkMessage").
//
// A step that fails (JSON-RPC error, SDK error) is reported in its result and
// does not change the exit status. The process exits non-zero only for
// harness failures: unreadable or invalid input, or a failed connect. The
// reason is then written to stderr.

import { readFileSync } from 'node:fs';

import { Client, ProtocolError, SdkError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import * as z from 'zod';

// A result schema that accepts any object and keeps every field, known or
// not (tool, name, annotations, resultType, _meta, ...).
const anyResult = z.looseObject({});

class HarnessError extends Error {}

function readPlan() {
    const text = process.argv[2] ? readFileSync(process.argv[2], 'utf8') : readFileSync(0, 'utf8');
    let plan;
    try {
        plan = JSON.parse(text);
    } catch (err) {
        throw new HarnessError(`plan is not JSON: ${err.message}`);
    }
    if (plan === null || typeof plan !== 'object' || Array.isArray(plan)) {
        throw new HarnessError('plan must be a JSON object');
    }
    if (!Array.isArray(plan.steps ?? [])) {
        throw new HarnessError('plan.steps must be a list');
    }
    return plan;
}

function versionNegotiation(era) {
    switch (era ?? 'legacy') {
        case 'legacy':
        case '2025-11-25':
            return { mode: 'legacy' };
        case 'auto':
            return { mode: 'auto' };
        default:
            if (typeof era === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(era)) {
                return { mode: { pin: era } };
            }
            throw new HarnessError(`unknown era ${JSON.stringify(era)}`);
    }
}

function makeTransport(spec) {
    if (spec === null || typeof spec !== 'object') {
        throw new HarnessError('plan.transport must be {"http": URL} or {"stdio": {...}}');
    }
    if (typeof spec.http === 'string') {
        return new StreamableHTTPClientTransport(new URL(spec.http));
    }
    if (spec.stdio && typeof spec.stdio.command === 'string') {
        const params = {
            command: spec.stdio.command,
            args: spec.stdio.args ?? [],
            stderr: 'inherit'
        };
        if (spec.stdio.env) params.env = spec.stdio.env;
        if (spec.stdio.cwd) params.cwd = spec.stdio.cwd;
        return new StdioClientTransport(params);
    }
    throw new HarnessError('plan.transport must be {"http": URL} or {"stdio": {"command": ...}}');
}

function describeError(err) {
    if (err instanceof ProtocolError) {
        const e = { code: err.code, message: err.message };
        if (err.data !== undefined) e.data = err.data;
        return e;
    }
    if (err instanceof SdkError) {
        const e = { sdkCode: err.code, message: err.message };
        if (err.data !== undefined) e.data = err.data;
        if (err.cause instanceof Error) e.cause = String(err.cause.message ?? err.cause);
        // An HTTP error status (for example 404 for -32601 on 2026-07-28)
        // reaches us as an SdkHttpError whose data holds the body; if the
        // body is a JSON-RPC error, report its code and message too.
        if (typeof err.data?.status === 'number') e.httpStatus = err.data.status;
        const rpc = jsonRpcError(err.data?.text);
        if (rpc) {
            e.sdkMessage = e.message;
            e.code = rpc.code;
            e.message = rpc.message;
            e.data = rpc.data;
            if (e.data === undefined) delete e.data;
        }
        return e;
    }
    if (err instanceof Error) {
        // Some errors still carry a numeric JSON-RPC code without the brand.
        const e = { message: err.message, name: err.name };
        if (typeof err.code === 'number') e.code = err.code;
        return e;
    }
    return { message: String(err) };
}

function jsonRpcError(text) {
    if (typeof text !== 'string') return undefined;
    try {
        const body = JSON.parse(text);
        if (body?.jsonrpc === '2.0' && typeof body.error?.code === 'number') return body.error;
    } catch {}
    return undefined;
}

function info(client) {
    const out = {
        protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
        era: client.getProtocolEra() ?? null,
        serverCapabilities: client.getServerCapabilities() ?? null,
        serverInfo: client.getServerVersion() ?? null
    };
    const instructions = client.getInstructions();
    if (instructions !== undefined) out.instructions = instructions;
    return out;
}

async function runStep(client, step, opts) {
    switch (step.op) {
        case 'info':
            return info(client);
        case 'list':
            return await client.listTools(step.params, opts);
        case 'call':
            return await client.callTool({ name: step.name, arguments: step.arguments ?? {} }, opts);
        case 'request': {
            if (typeof step.method !== 'string') throw new HarnessError('request step needs a method');
            const req = { method: step.method };
            if (step.params !== undefined) req.params = step.params;
            return await client.request(req, anyResult, opts);
        }
        default:
            throw new HarnessError(`unknown op ${JSON.stringify(step.op)}`);
    }
}

function write(stream, text) {
    return new Promise((resolve, reject) => stream.write(text, err => (err ? reject(err) : resolve())));
}

async function main() {
    const plan = readPlan();
    const timeout = plan.timeoutMs ?? 30000;
    const opts = { timeout };

    const capabilities = { ...(plan.capabilities ?? {}) };
    if (plan.extensions && Object.keys(plan.extensions).length > 0) {
        capabilities.extensions = { ...(capabilities.extensions ?? {}), ...plan.extensions };
    }

    const client = new Client(
        { name: 'preflight-interop-ts', version: '0.0.0' },
        { capabilities, versionNegotiation: versionNegotiation(plan.era) }
    );
    client.onerror = err => process.stderr.write(`client.mjs: client error: ${err?.message ?? err}\n`);
    const transport = makeTransport(plan.transport);

    try {
        await client.connect(transport, { timeout });
    } catch (err) {
        await client.close().catch(() => {});
        const e = new HarnessError(`connect failed: ${JSON.stringify(describeError(err))}`);
        throw e;
    }

    // Tap the transport after connect, when the client has installed its
    // own handler, so the raw messages are seen before the SDK decodes them.
    let wire = null;
    if (plan.wire) {
        const deliver = transport.onmessage;
        transport.onmessage = (message, extra) => {
            if (wire) wire.push(structuredClone(message));
            deliver?.call(transport, message, extra);
        };
    }

    const report = { ...info(client), results: [] };
    try {
        for (const step of plan.steps ?? []) {
            wire = plan.wire ? [] : null;
            let entry;
            try {
                const result = await runStep(client, step, opts);
                entry = { op: step.op, ok: true, result };
            } catch (err) {
                if (err instanceof HarnessError) throw err;
                entry = { op: step.op, ok: false, error: describeError(err) };
            }
            if (wire) entry.wire = wire;
            report.results.push(entry);
        }
    } finally {
        // A legacy HTTP session is ended politely so the server frees it.
        if (transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
            await transport.terminateSession().catch(err => process.stderr.write(`client.mjs: terminate session: ${err?.message ?? err}\n`));
        }
        await client.close().catch(err => process.stderr.write(`client.mjs: close: ${err?.message ?? err}\n`));
    }
    await write(process.stdout, JSON.stringify(report) + '\n');
}

try {
    await main();
    process.exit(0);
} catch (err) {
    process.stderr.write(`client.mjs: ${err instanceof HarnessError ? err.message : err?.stack ?? err}\n`);
    process.exit(2);
}
