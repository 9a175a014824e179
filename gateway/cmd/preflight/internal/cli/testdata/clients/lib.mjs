// lib.mjs is what the client drivers of ../../clients_test.go share: the
// plan they are given, the scenario they run through their client, and the
// line protocol with the Go test.
//
// A driver is run as `node DRIVER.mjs PLAN`, PLAN being one JSON document:
//
//   {
//     "transport": {"http": "http://127.0.0.1:PORT/mcp"}
//                | {"stdio": {"command": "...", "args": [...], "env": {...}}},
//     "era": "2025-11-25" | "2026-07-28" | "2025-06-18" | "2025-03-26",
//     "file": "/abs/path/of/the/file/the/delete/deletes",
//     "read": {"name": "files__manage_files", "arguments": {...}},
//     "delete": {"name": "files__manage_files", "arguments": {...}},
//     "elicit": "form" | "url" | null,   // the elicitation the client declares, if any
//     "answers": [...],                   // the answers to its questions, in order (below)
//     "retries": 2,                        // how many times the delete is sent again
//     "timeoutMs": 20000
//   }
//
// It writes one JSON object per line on stdout, each the outcome of one step:
//
//   {"op": "connect", "ok": true, "protocolVersion": "..."}
//   {"op": "tools", "ok": true, "names": [...]}
//   {"op": "prompts" | "resources" | "resourceTemplates", "ok": true, "count": N}
//   {"op": "read" | "delete" | "retry1" | "retry2", "ok": true, "isError": false, "text": "...", "exists": true}
//   {"op": "elicit", "params": {...}, "answer": {...}}
//   {"op": "...", "ok": false, "error": "..."}
//   {"op": "uncaught", "phase": "...", "error": "..."}   // an error the client raised on its own
//   {"op": "done"}
//
// ("exists" says whether plan.file exists once the step is over.) When a
// tool error names an approval link, the driver asks the Go test to approve
// it before the first retry: it writes {"event": "approve", "link": URL} and
// waits for a line on stdin, "approved" or the reason it was not. An answer
// {"approve": true, ...} to a URL elicitation does the same with the
// elicitation's URL before answering. Any other answer is an ElicitResult,
// sent as it is ({"action": "accept", "content": {...}}, {"action":
// "decline"}).

import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

export const plan = JSON.parse(process.argv[2]);
export const timeout = plan.timeoutMs ?? 20000;

// phase is the step the driver is at ("close" while the client closes),
// for the reports of errors a client raises on its own.
export let phase = 'start';

export function emit(obj) {
    process.stdout.write(JSON.stringify(obj) + '\n');
}

function errorText(err) {
    if (err instanceof Error) {
        let s = `${err.name}: ${err.message}`;
        if (err.code !== undefined) s += ` (code ${JSON.stringify(err.code)})`;
        if (err.data !== undefined) s += ` data ${JSON.stringify(err.data)}`;
        if (err.cause !== undefined) s += ` cause: ${errorText(err.cause)}`;
        return s;
    }
    return typeof err === 'string' ? err : JSON.stringify(err);
}

// The Go test's answers, one per line.
let stdinLines;
const queued = [];
const waiting = [];
function nextLine() {
    if (!stdinLines) {
        stdinLines = createInterface({ input: process.stdin });
        stdinLines.on('line', line => (waiting.length ? waiting.shift()(line) : queued.push(line)));
        stdinLines.on('close', () => {
            while (waiting.length) waiting.shift()('stdin closed');
        });
    }
    return queued.length ? Promise.resolve(queued.shift()) : new Promise(resolve => waiting.push(resolve));
}

// approve asks the Go test to approve link on the page and waits until it
// has.
export async function approve(link) {
    emit({ event: 'approve', link });
    const answer = await nextLine();
    if (answer !== 'approved') throw new Error(`the approval of ${link} was not given: ${answer}`);
}

const approvalLink = /(https?:\/\/[^\s"]+\/ui\/approvals\/[A-Za-z0-9_-]+)/;

// linkIn returns the approval link in text, or undefined.
export function linkIn(text) {
    return approvalLink.exec(text ?? '')?.[1];
}

// textOf joins the text content of a CallToolResult.
export function textOf(result) {
    const content = Array.isArray(result?.content) ? result.content : [];
    return content
        .filter(c => c?.type === 'text')
        .map(c => c.text)
        .join('\n');
}

// toolResult is how a step reports a CallToolResult.
export function toolResult(result) {
    return { isError: result?.isError === true, text: textOf(result) };
}

// answerQuestion answers the Nth question the client is asked with
// plan.answers[N], recording it; a client's elicitation handler calls it.
let asked = 0;
export async function answerQuestion(params) {
    const answer = (plan.answers ?? [])[asked++];
    const record = { op: 'elicit', params };
    if (answer === undefined) {
        emit({ ...record, answer: null });
        throw new Error(`no answer for question ${asked}`);
    }
    let result = answer;
    if (answer.approve) {
        const { approve: _, ...rest } = answer;
        result = rest;
        emit({ ...record, answer: result, approving: params?.url ?? null });
        await approve(params?.url);
        return result;
    }
    emit({ ...record, answer: result });
    return result;
}

// tap calls seen with every message transport delivers, before the client
// does: the client installs its handler as transport.onmessage, and the
// transport calls whatever is there.
export function tap(transport, seen) {
    let handler;
    Object.defineProperty(transport, 'onmessage', {
        configurable: true,
        get: () => handler,
        set: fn => {
            handler =
                typeof fn === 'function'
                    ? (message, extra) => {
                          try {
                              seen(message);
                          } catch {}
                          return fn(message, extra);
                      }
                    : fn;
        }
    });
    return transport;
}

// pinVersion makes a transport's initialize request ask for version
// instead of the client's latest: the client then negotiates from it as
// a client of that version does.
export function pinVersion(transport, version) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
        if (message?.method === 'initialize') {
            message = { ...message, params: { ...message.params, protocolVersion: version } };
        }
        return send(message, options);
    };
    return transport;
}

async function step(op, fn) {
    phase = op;
    const start = Date.now();
    let out;
    try {
        out = { op, ok: true, ...(await fn()) };
    } catch (err) {
        out = { op, ok: false, error: errorText(err) };
        if (err?.stack) out.stack = String(err.stack).split('\n').slice(0, 6).join('\n');
    }
    if (plan.file && ['read', 'delete', 'retry1', 'retry2'].includes(op)) out.exists = existsSync(plan.file);
    out.ms = Date.now() - start;
    emit(out);
    return out;
}

// run drives a client through the scenario. adapter has:
//   connect() -> {protocolVersion}
//   tools() -> list of tool names
//   prompts(), resources(), resourceTemplates() (optional) -> the list
//   call({name, arguments}) -> {isError, text}
//   close()
export async function run(adapter) {
    const connected = await step('connect', () => adapter.connect());
    if (connected.ok) {
        await step('tools', async () => ({ names: await adapter.tools() }));
        for (const kind of ['prompts', 'resources', 'resourceTemplates']) {
            if (!adapter[kind]) continue;
            await step(kind, async () => {
                const list = await adapter[kind]();
                if (!Array.isArray(list)) throw new Error(`${kind}: not a list: ${JSON.stringify(list)}`);
                return { count: list.length };
            });
        }
        await step('read', () => adapter.call(plan.read));
        let last = await step('delete', () => adapter.call(plan.delete));
        for (let i = 1; i <= (plan.retries ?? 0); i++) {
            const link = last.ok && last.isError ? linkIn(last.text) : undefined;
            if (link && i === 1) {
                try {
                    await approve(link);
                } catch (err) {
                    emit({ op: 'approve', ok: false, error: errorText(err) });
                    break;
                }
            }
            last = await step(`retry${i}`, () => adapter.call(plan.delete));
        }
    }
    await step('close', async () => {
        await adapter.close();
        return {};
    });
    emit({ op: 'done' });
    stdinLines?.close();
}

// main runs the driver's run and exits: 0 when it ran (a step's failure is
// in its line), 2 when the driver itself failed.
export async function main(body) {
    try {
        await body();
        await new Promise(resolve => process.stdout.write('', resolve));
        process.exit(0);
    } catch (err) {
        process.stderr.write(`driver: ${err?.stack ?? err}\n`);
        process.exit(2);
    }
}
