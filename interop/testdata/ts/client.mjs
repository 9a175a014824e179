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
//     "elicit": [{"action": "accept", "content": {...}}, ...],   // optional, see below
//     "sample": [{"role": "assistant", "model": "m", "content": {...}}, ...],   // optional, see below
//     "manual": true,              // optional: MRTR manual mode, see below
//     "autoFulfill": false,        // optional: inputRequired.autoFulfill as given
//     "maxRounds": 10,             // optional: inputRequired.maxRounds
//     "steps": [
//       {"op": "info"},
//       {"op": "list"},
//       {"op": "call", "name": "echo", "arguments": {...}},
//       {"op": "request", "method": "tools/resolve", "params": {...}},
//       {"op": "retry", "from": 2, "inputResponses": {...}, "requestState": "..."}
//     ]
//   }
//
// "elicit" registers an elicitation/create handler (and declares
// capabilities.elicitation = {"form": {}} unless "capabilities" has an
// elicitation entry) that answers the Nth question it receives with the Nth
// ElicitResult of the list; a question beyond the list fails the handler
// (an error the server sees on a legacy connection, a failed step under
// 2026-07-28). "sample" does the same for sampling/createMessage (declaring
// capabilities.sampling = {}). A single object is a list of one; absent or
// null registers no handler; an empty list registers one that fails every
// question (the capability is still declared). Every
// question a handler received is reported under "asked", in order:
// {"step": index, "method": ..., "id": ..., "params": {...}} where "id" is
// the JSON-RPC id the handler was given: the server's request id on a legacy
// connection (a real server-to-client request), the inputRequests key when
// the SDK fulfils an input_required round (2026-07-28); "params" is what the
// handler saw, after the SDK validated the request.
//
// "manual" sets inputRequired.autoFulfill = false and passes
// allowInputRequired: true on every call, request and retry step: an
// input_required result is then the step's result, as the SDK hands it back:
// {"resultType": "input_required", "inputRequests": {...}, "requestState": "..."}
// (resultType kept, unlike a complete result). With autoFulfill false and no
// allowInputRequired, the SDK rejects the call (SdkError
// UNSUPPORTED_RESULT_TYPE). "allowInputRequired": true on a step does the
// same for that step alone, with auto-fulfilment left on.
//
// A "retry" step resends the request of step "from" (default: the step
// before it; a call, request or retry step) with "inputResponses" and the
// "requestState" of step "from"'s result echoed byte for byte (or the given
// "requestState" instead), on a new request id: what a manual-mode client
// does after it gathered the answers. It goes through callTool when the
// original step was a call, else through client.request.
//
// Output: one JSON document on stdout:
//
//   {"protocolVersion": "...", "era": "modern"|"legacy", "serverCapabilities": {...},
//    "serverInfo": {...},
//    "results": [{"op": "...", "ok": true, "result": {...}}
//              | {"op": "...", "ok": false, "error": {"code": N, "message": "...", "data": ...}}],
//    "asked": [{"step": N, "method": "elicitation/create", "id": ..., "params": {...}}]}
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

// answerList normalizes a plan's scripted answers: undefined (no handler),
// one object (a list of one) or a list of objects.
function answerList(plan, field) {
    const v = plan[field];
    if (v === undefined || v === null) return undefined;
    const list = Array.isArray(v) ? v : [v];
    for (const a of list) {
        if (a === null || typeof a !== 'object' || Array.isArray(a)) {
            throw new HarnessError(`plan.${field} must be an object or a list of objects`);
        }
    }
    return list;
}

// scriptedHandler answers the Nth request with answers[N] and records
// every request it receives in asked.
function scriptedHandler(method, answers, asked, currentStep) {
    let next = 0;
    return async (request, ctx) => {
        asked.push({
            step: currentStep(),
            method,
            id: ctx?.mcpReq?.id ?? null,
            params: structuredClone(request.params ?? {})
        });
        if (next >= answers.length) {
            throw new Error(`client.mjs: no scripted answer left for ${method} (question ${next + 1}, ${answers.length} scripted)`);
        }
        return structuredClone(answers[next++]);
    };
}

// stepRequest is the request a call, request or retry step sends, as
// {op, method, params}: op is the SDK entry point ("call" or "request").
function stepRequest(step, index, sent, results) {
    switch (step.op) {
        case 'call':
            return { op: 'call', method: 'tools/call', params: { name: step.name, arguments: step.arguments ?? {} } };
        case 'request': {
            if (typeof step.method !== 'string') throw new HarnessError('request step needs a method');
            return { op: 'request', method: step.method, params: step.params };
        }
        case 'retry': {
            const from = step.from ?? index - 1;
            if (!Number.isInteger(from) || from < 0 || from >= index) {
                throw new HarnessError(`retry step ${index}: "from" must name an earlier step, got ${JSON.stringify(step.from)}`);
            }
            const orig = sent[from];
            if (!orig) throw new HarnessError(`retry step ${index}: step ${from} (${results[from].op}) sent no call or request`);
            const prev = results[from];
            const params = { ...(orig.params ?? {}) };
            delete params.inputResponses;
            delete params.requestState;
            if (step.inputResponses !== undefined) params.inputResponses = step.inputResponses;
            const state = step.requestState ?? (prev.ok ? prev.result?.requestState : undefined);
            if (state !== undefined) params.requestState = state;
            return { op: orig.op, method: orig.method, params };
        }
        default:
            return undefined;
    }
}

async function runStep(client, step, req, opts) {
    switch (step.op) {
        case 'info':
            return info(client);
        case 'list':
            return await client.listTools(step.params, opts);
        case 'call':
        case 'request':
        case 'retry': {
            if (req.op === 'call') return await client.callTool(req.params, opts);
            const r = { method: req.method };
            if (req.params !== undefined) r.params = req.params;
            return await client.request(r, anyResult, opts);
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
    const elicit = answerList(plan, 'elicit');
    const sample = answerList(plan, 'sample');
    if (elicit && capabilities.elicitation === undefined) capabilities.elicitation = { form: {} };
    if (sample && capabilities.sampling === undefined) capabilities.sampling = {};

    const options = { capabilities, versionNegotiation: versionNegotiation(plan.era) };
    const inputRequired = {};
    if (plan.manual) inputRequired.autoFulfill = false;
    if (typeof plan.autoFulfill === 'boolean') inputRequired.autoFulfill = plan.autoFulfill;
    if (plan.maxRounds) inputRequired.maxRounds = plan.maxRounds;
    if (Object.keys(inputRequired).length > 0) options.inputRequired = inputRequired;

    const client = new Client({ name: 'preflight-interop-ts', version: '0.0.0' }, options);
    client.onerror = err => process.stderr.write(`client.mjs: client error: ${err?.message ?? err}\n`);

    const asked = [];
    let currentStep = null;
    if (elicit) client.setRequestHandler('elicitation/create', scriptedHandler('elicitation/create', elicit, asked, () => currentStep));
    if (sample) client.setRequestHandler('sampling/createMessage', scriptedHandler('sampling/createMessage', sample, asked, () => currentStep));
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

    const report = { ...info(client), results: [], asked };
    const sent = [];
    try {
        for (const [index, step] of (plan.steps ?? []).entries()) {
            wire = plan.wire ? [] : null;
            currentStep = index;
            let entry;
            try {
                const req = stepRequest(step, index, sent, report.results);
                sent.push(req);
                const stepOpts = plan.manual || step.allowInputRequired ? { ...opts, allowInputRequired: true } : opts;
                const result = await runStep(client, step, req, stepOpts);
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
